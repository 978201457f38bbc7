"""The layers point one way (docs/design.md, "Layers"), read from every import in the code, and
stated here by package: a module belongs to the layer of the package it is in.

    csadmin.main (cs)  ->  csadmin.shell  ->  csadmin.cli  ->  csadmin.fleet  ->  the client  ->  the shared leaves
    csadmin.daemon (csd): main -> process -> serve -> commands -> auth; serve, process -> metrics, store
                    -> the model (csadmin.statemachine) -> the shared leaves it may use
    csadmin.launch, csadmin.cstorch -> the client -> the shared leaves
    csadmin.cstorch: __main__ -> the top level (the script's names) -> core (compile, trace, capture)
                    -> the library (utils.data, utils.tensorboard, utils.tensor, metrics, amp, saver, backends)
                    -> backend() -> optim, distributed -> process_backend and the backend's leaves

The shared leaves (csadmin.shared, csadmin.errors) import only each other; the pure model only
the few leaves it needs (errors, states, scenario_limits, programs, opargs); nothing on the client side
imports csd or the model; the client never imports the console; and every module is in one of
these packages, so a new module takes its place in a layer by the folder it is put in.
"""

from __future__ import annotations

import ast
import os

from tests.harness import ROOT

# Where each top package's files are in the repository, and its import name.
FOLDERS = {"csadmin": "csadmin", "csadmin.daemon": "daemon", "csadmin.statemachine": "statemachine"}

# The layers, each a set of packages (a package is itself and every module below it).
LEAVES = ("csadmin.shared", "csadmin.errors")
# The pure leaves the model may import (programs: a run's mode and program, which csd checks
# as an op's arguments before the model sees them; opargs: the record of a request's arguments,
# which csd builds once from the op's declaration and hands down).
MODEL_LEAVES = ("csadmin.errors", "csadmin.shared.states", "csadmin.shared.scenario_limits",
                "csadmin.shared.programs", "csadmin.shared.opargs")
MODEL = ("csadmin.statemachine",)
CLIENT = ("csadmin.client", "csadmin.clientlib")
CONSOLE = ("csadmin.main", "csadmin.cli", "csadmin.shell", "csadmin.slurm", "csadmin.__main__")
FLEET = ("csadmin.fleet",)
LAUNCH = ("csadmin.launch",)
CSTORCH = ("csadmin.cstorch",)
# The later releases' `cerebras.appliance` (csadmin.appliance): the leaves only, never torch;
# cstorch (its runner registers it) may import it.
APPLIANCE = ("csadmin.appliance",)
CSD = ("csadmin.daemon",)
# csd's packages, and which of csd's other packages each may import (never one above it).
CSD_PACKAGES = {
    "csadmin.daemon.main": ("process", "serve", "store"),  # `csd`: the command line, then the loop
    "csadmin.daemon.__main__": ("main",),
    "csadmin.daemon.process": ("serve", "commands", "metrics", "store", "auth"),
    "csadmin.daemon.serve": ("commands", "metrics", "store", "auth"),
    "csadmin.daemon.commands": ("auth",),
    "csadmin.daemon.metrics": (),
    "csadmin.daemon.store": (),
    "csadmin.daemon.auth": (),
}
LAYERS = (("csadmin",), LEAVES, MODEL, CLIENT, CONSOLE, FLEET, LAUNCH, CSTORCH, APPLIANCE, CSD)
# cstorch's packages, and which of cstorch's other packages each may import (names under
# csadmin.cstorch; "" is the top level). A row names a module or a package; a package with rows
# inside it (the top level, backend, utils) is its __init__ alone, so each new module there needs
# a row of its own, where the table says what it may import.
CSTORCH_PACKAGES = {
    # `python -m csadmin.cstorch SCRIPT`: the appliance's names for the script, the backend it
    # configures from the command line, the input workers it may be started as, and R1.8's own
    # modules (core/r18) it registers under cerebras_pytorch.
    # ModelZoo 2.x's code needs one thing of torch 2.4 that torch 2.13 dropped (torch_compat).
    "csadmin.cstorch.__main__": ("", "backend.appliance", "backend.process_backend", "core", "torch_compat",
                                 "utils.data"),
    # The stand-in packages on the PYTHONPATH of a process the script starts (not packages of
    # ours: no __init__.py above them): each prepares its process through the runner.
    "csadmin.cstorch._site": ("__main__",),
    # The top level is the script's `import cerebras.pytorch as cstorch`: it gathers the names of
    # every package below and defines none that they import.
    "csadmin.cstorch": ("_version", "utils.constant", "core", "amp", "optim", "metrics", "storage", "saver", "sparse",
                        "experimental", "utils.pol", "nn", "lib", "profiler", "cirh",
                        "distributed", "backends",
                        "utils", "utils.data", "utils.tensorboard", "utils.tensor", "utils.step_closures",
                        "backend", "backend.backend_type", "backend.config", "backend.process_backend"),
    # compile, trace and capture run a step over the library: the precision to capture under
    # (amp), the optimizers it guards, the input it feeds, the summaries it writes, the closures
    # it dispatches, and the backend and csd it programs; R1.8's cb_model (core/r18) answers
    # ModelZoo's questions from the cluster config (distributed) and gives it make_constant.
    "csadmin.cstorch.core": ("amp", "optim", "distributed", "experimental", "utils.constant", "utils.data",
                             "utils.tensorboard",
                             "utils.step_closures", "backend", "backend.backend_type", "backend.config",
                             "backend.csd_link", "backend.device", "backend.ltc_backend", "backend.process_backend"),
    # The library a script calls: each asks the process's backend (use_cs, its mode, its run),
    # never the compile above it.
    "csadmin.cstorch.utils": ("distributed", "utils.benchmark", "utils.data", "utils.nest", "utils.tensorboard",
                              "utils.tracker"),  # its doorway
    # The DataLoader and DataExecutor: the backend's settings and run, csd for the input workers,
    # the cluster config, the optimizers' argument checks, the executor's profiler.
    "csadmin.cstorch.utils.data": ("backend", "backend.backend_type", "backend.config", "backend.csd_link",
                                   "backend.process_backend",
                                   "backend.run", "checks", "distributed", "optim", "utils.profiler"),
    # Summaries and the run's event files: the backend, the optimizer's learning rates, and
    # step_closure (utils.step_closures, beside checkpoint_closure as in the real package).
    "csadmin.cstorch.utils.tensorboard": ("backend", "backend.process_backend", "optim", "utils.step_closures"),
    "csadmin.cstorch.utils.tensor": ("backend",),  # the tensor factories make tensors on the backend's device
    "csadmin.cstorch.metrics": ("backend.process_backend", "utils.step_closures"),
    "csadmin.cstorch.amp": ("checks", "optim", "backend.device", "backend.process_backend"),  # optimizer_step checks as the optimizers do
    "csadmin.cstorch.saver": ("storage", "utils.tensor"),  # R1.8's saver: the checkpoint files, tensors
    "csadmin.cstorch.backends": ("backend.process_backend",),  # cstorch.backends.csx: the settings it holds
    # backend(): builds the process's one Backend by configure's rules (config), asks csd for the
    # system (csd_link), takes a ClusterConfig (distributed) and refuses to come after a cstorch
    # Optimizer (optim.optimizer). The library above asks it use_cs / current_backend_impl, so it
    # sits between them and the packages it reads.
    "csadmin.cstorch.backend": ("backend.backend_type", "backend.cluster", "backend.config", "backend.csd_link",
                                "backend.process_backend", "distributed", "optim"),
    "csadmin.cstorch.optim": ("checks", "backend.device", "backend.process_backend"),
    # Weight sparsity: masks pruning a model's weights and a cstorch optimizer's state (its
    # argument checks, the glob filters of utils.utils).
    "csadmin.cstorch.sparse": ("checks", "optim", "utils.utils"),
    # The later releases' experimental features: traced-tensor hooks the capture calls, held by
    # the process's backend.
    "csadmin.cstorch.experimental": ("backend", "backend.process_backend", "lib", "utils.utils"),  # the backend's run: state only on its checkpoint steps
    "csadmin.cstorch.distributed": ("backend.process_backend",),  # the cluster config configure reads
    "csadmin.cstorch.utils.step_closures": ("backend.process_backend",),  # closures run on the run's steps
    "csadmin.cstorch.utils.profiler": ("utils.tracker",),
    # The hooks on the tensors a CSX run hands back (core/program.py announces them).
    "csadmin.cstorch.backend.ltc_backend": ("backend.process_backend",),
    "csadmin.cstorch.backend.csd_link": ("backend.config",),  # csd as configure named it
    "csadmin.cstorch.backend.config": ("backend.appliance", "backend.process_backend"),  # configure fills the backend
    # The process's one backend object: its type, CSX settings, device and the run on csd.
    "csadmin.cstorch.backend.process_backend": ("backend.backend_type", "backend.csx_settings", "backend.device",
                                                "backend.run"),
    # The leaves: plain values, the checkpoint files and the run's clock, none of cstorch's state.
    "csadmin.cstorch.backend.backend_type": (),
    "csadmin.cstorch.backend.cluster": (),  # a CSX backend's `cluster`: its config and workflow
    "csadmin.cstorch.backend.csx_settings": ("backend.csx_debug",),
    "csadmin.cstorch.backend.csx_debug": (),  # the appliance's DebugArgs and INI (csadmin.appliance)
    "csadmin.cstorch.backend.device": (),
    "csadmin.cstorch.backend.run": (),
    "csadmin.cstorch.backend.appliance": (),
    "csadmin.cstorch.storage": ("backend.process_backend",),  # which API generation's file format to write
    "csadmin.cstorch.nn": ("cirh",),  # the torch.nn look-alike: torch's losses, functional (its kernel classes refused as cirh's)
    "csadmin.cstorch.lib": (),  # the native library's calls ModelZoo makes (compiler attributes)
    "csadmin.cstorch.profiler": (),  # the op profiler: its schedule, and the profile refused
    "csadmin.cstorch.cirh": (),  # the system's compiler ops: refused by name
    "csadmin.cstorch.utils.benchmark": (),  # the dataloader benchmark: refused by name
    "csadmin.cstorch.checks": (),  # the argument checks the optimizers, amp and the DataLoader share
    "csadmin.cstorch._version": (),
    "csadmin.cstorch.utils.constant": ("backend",),  # make_constant asks whether the backend is CSX
    # Compiler hints on a function's ops (core.annotation), on CSX only (backend's use_cs).
    "csadmin.cstorch.utils.kernel": ("backend", "core"),
    "csadmin.cstorch.utils.pol": ("backend", "core"),
    "csadmin.cstorch.utils.num_kv_groups": ("backend", "core"),
    "csadmin.cstorch.utils.call_once": (),
    "csadmin.cstorch.torch_compat": (),  # what ModelZoo 2.x (written for torch 2.4) needs of torch 2.13
    "csadmin.cstorch.utils.nest": (),
    "csadmin.cstorch.utils.utils": (),
    "csadmin.cstorch.utils.tracker": (),
}
# Imports that go up the table, each with its way out; the test fails once one is gone, so its
# exception goes with it. None today (step_closure moved beside checkpoint_closure took the last).
UPWARD_IMPORTS: set = set()


def _in(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _modules() -> dict[str, str]:
    """Every module of ours: import name -> file (the linked folders read once, where they are)."""
    found = {}
    for package, folder in FOLDERS.items():
        top = os.path.join(ROOT, folder)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d)) and d != "__pycache__"]
            for name in filenames:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, name), top)[:-3].replace(os.sep, ".")
                    module = package if rel == "__init__" else f"{package}.{rel.removesuffix('.__init__')}"
                    found[module] = os.path.join(dirpath, name)
    return found


MODULES = _modules()


def _imports(module: str) -> set[str]:
    """The modules of ours `module` imports, anywhere in it (inside functions too)."""
    with open(MODULES[module], encoding="utf-8") as f:
        tree = ast.parse(f.read())
    package = module if MODULES[module].endswith("__init__.py") else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            # `from P import m, n`: the modules m and n when they are modules (what the importer
            # uses; a package's own __init__ is its doorway), else P itself for its names.
            found = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            names |= found if len(found) == len(node.names) else found | {base}
    return {name for name in names if name in MODULES}


def _of(packages) -> list[str]:
    return [m for m in MODULES if _in(m, packages)]


def test_every_module_is_in_a_layer():
    """A module belongs to a layer by the package it is in: no flat module beside them."""
    for module in MODULES:
        assert sum(_in(module, layer) for layer in LAYERS if layer != ("csadmin",)) == 1 or module == "csadmin", module
    for module in _of(CSD):
        assert module == "csadmin.daemon" or _in(module, CSD_PACKAGES), module


def test_the_model_imports_only_the_shared_leaves():
    for module in _of(MODEL):
        outside = {m for m in _imports(module) if not _in(m, MODEL)}
        assert all(m in ("csadmin", "csadmin.shared") or _in(m, MODEL_LEAVES) for m in outside), (module, outside)


def test_the_leaves_import_only_leaves():
    for module in _of(LEAVES):
        assert all(m == "csadmin" or _in(m, LEAVES) for m in _imports(module)), (module, _imports(module))


def test_csd_imports_the_model_and_the_leaves_never_the_client_side():
    for module in _of(CSD):
        outside = {m for m in _imports(module) if not _in(m, CSD + MODEL)}
        assert all(m == "csadmin" or _in(m, LEAVES) for m in outside), (module, outside)


def test_csds_packages_point_one_way():
    """process -> serve -> commands -> auth; metrics and the store below serving (docs/design.md)."""
    for module in _of(CSD):
        if module == "csadmin.daemon":
            continue
        package = next(p for p in CSD_PACKAGES if _in(module, (p,)))
        allowed = (package,) + tuple(f"csadmin.daemon.{name}" for name in CSD_PACKAGES[package])
        inside = {m for m in _imports(module) if _in(m, CSD) and m != "csadmin.daemon"}
        assert all(_in(m, allowed) for m in inside), (module, inside - set(_of(allowed)))


# The rows that are a package's __init__ alone: those with rows inside them.
CSTORCH_DOORWAYS = {p for p in CSTORCH_PACKAGES if any(q.startswith(p + ".") for q in CSTORCH_PACKAGES)}


def _cstorch_package(module: str) -> str:
    """The row of CSTORCH_PACKAGES `module` is in ("" if none)."""
    return next((p for p in CSTORCH_PACKAGES
                 if module == p or (module.startswith(p + ".") and p not in CSTORCH_DOORWAYS)), "")


def _cstorch(name: str) -> str:
    return "csadmin.cstorch" + (f".{name}" if name else "")


def test_every_cstorch_module_has_a_row_and_every_row_a_module():
    for module in _of(CSTORCH):
        assert _cstorch_package(module), f"{module}: give its package a row in CSTORCH_PACKAGES"
    for package, allowed in CSTORCH_PACKAGES.items():
        assert _of((package,)), f"{package}: no such module (a stale row)"
        assert all(_cstorch(name) in CSTORCH_PACKAGES for name in allowed), (package, allowed)


def test_cstorchs_table_points_one_way():
    """The rows are an order: no package may import, through the table, one that imports it."""
    state: dict[str, int] = {}

    def visit(package, path):
        state[package] = 1
        for other in map(_cstorch, CSTORCH_PACKAGES[package]):
            assert state.get(other) != 1, " -> ".join(path + [package, other])
            if other not in state:
                visit(other, path + [package])
        state[package] = 2

    for package in CSTORCH_PACKAGES:
        if package not in state:
            visit(package, [])


def test_cstorchs_packages_point_one_way():
    """__main__ -> the top level -> core -> the library -> backend() -> optim, distributed ->
    process_backend -> its leaves (CSTORCH_PACKAGES), each module by the row of its package."""
    for module in _of(CSTORCH):
        package = _cstorch_package(module)
        allowed = {package} | {_cstorch(name) for name in CSTORCH_PACKAGES[package]}
        inside = {m for m in _imports(module) if _in(m, CSTORCH)}
        bad = {m for m in inside if _cstorch_package(m) not in allowed and (module, m) not in UPWARD_IMPORTS}
        assert not bad, (module, bad)
    for module, upward in UPWARD_IMPORTS:
        assert upward in _imports(module), f"{module} no longer imports {upward}: delete it from UPWARD_IMPORTS"


def test_the_client_side_never_imports_csd_or_the_model():
    for module in MODULES:
        if _in(module, CSD + MODEL):
            continue
        inside = {m for m in _imports(module) if _in(m, CSD + MODEL)}
        assert not inside, (module, inside)


def test_the_client_never_imports_the_console():
    for module in _of(CLIENT):
        assert all(m == "csadmin" or _in(m, CLIENT + LEAVES) for m in _imports(module)), (module, _imports(module))
    for module in _of(("csadmin.cli",)):
        assert not {m for m in _imports(module) if _in(m, ("csadmin.shell", "csadmin.main"))}, module


def test_the_fleet_stands_on_the_client_and_never_imports_the_console():
    for module in _of(FLEET):
        outside = {m for m in _imports(module) if not _in(m, FLEET)}
        assert all(m == "csadmin" or _in(m, CLIENT + LEAVES) for m in outside), (module, outside)


def test_no_module_imports_itself_back():
    graph = {m: _imports(m) - {m} for m in MODULES}
    state: dict[str, int] = {}

    def visit(module, path):
        state[module] = 1
        for other in graph[module]:
            if state.get(other) == 1:
                raise AssertionError(" -> ".join(path + [module, other]))
            if other not in state:
                visit(other, path + [module])
        state[module] = 2

    for module in graph:
        if module not in state:
            visit(module, [])


def test_only_cstorch_imports_cstorch_and_it_reaches_csd_through_the_client():
    """csadmin.cstorch (torch, h5py) is an optional extra: nothing else imports it, and it talks
    to csd as any runtime does (the client side and the leaves, never csd or the model)."""
    for module in MODULES:
        inside = {m for m in _imports(module) if _in(m, CSTORCH)}
        if not _in(module, CSTORCH):
            assert not inside, (module, inside)
            continue
        outside = {m for m in _imports(module) if not _in(m, CSTORCH)}
        assert all(m == "csadmin" or _in(m, CLIENT + LEAVES + APPLIANCE) for m in outside), (module, outside)


def test_the_appliance_package_imports_only_the_leaves_and_never_torch():
    """csadmin.appliance is `cerebras.appliance`, which the real system's client installs without
    torch: it stands on the leaves alone, and importing all of it loads no torch."""
    import subprocess
    import sys

    for module in _of(APPLIANCE):
        outside = {m for m in _imports(module) if not _in(m, APPLIANCE)}
        assert all(m == "csadmin" or _in(m, LEAVES) for m in outside), (module, outside)
    code = ("import importlib, pkgutil, sys, csadmin.appliance as a; "
            "[importlib.import_module(i.name) for i in pkgutil.walk_packages(a.__path__, 'csadmin.appliance.')]; "
            "print(sorted(m for m in ('torch', 'csadmin.cstorch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def test_the_console_and_the_client_never_import_torch():
    import subprocess
    import sys

    code = ("import sys, csadmin.client, csadmin.main, csadmin.daemon.main; "
            "bad = sorted(m for m in ('torch', 'h5py', 'numpy') if m in sys.modules); print(bad)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def test_the_launchers_stand_on_the_client_side_and_never_import_cstorch_or_torch():
    """csadmin.launch (csrun_cpu, csrun_wse, cs_input_analyzer) runs cstorch scripts in their own
    processes: it imports the leaves and the client side (the inventory), never cstorch or torch."""
    import subprocess
    import sys

    for module in _of(LAUNCH):
        outside = {m for m in _imports(module) if not _in(m, LAUNCH)}
        assert all(m == "csadmin" or _in(m, CLIENT + LEAVES) for m in outside), (module, outside)
    code = ("import sys, csadmin.launch.cpu, csadmin.launch.wse, csadmin.launch.analyzer; "
            "print(sorted(m for m in ('torch', 'h5py', 'numpy', 'csadmin.cstorch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)
