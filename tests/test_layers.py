"""The layers point one way (docs/design.md, "Layers"), read from every import in the code.

    statemachine  <-  daemon  ->  shared leaves (errors, states, protocol, connection, keyfile,
                                  scenario_limits, scenario_file, ops, opargs, programs)
                                  ^
                     client (transport, follow, credentials, runs, inventory, inventory_cache) <-  fleet  <-  cli  <-  shell  <-  main

The pure model imports only the stdlib-only, pure leaves it shares with everyone (errors, states,
scenario_limits, programs);
nothing on the client side imports csd or the model; the client path never imports the console.
"""

from __future__ import annotations

import ast
import os

from tests.harness import ROOT

# Where each layer's files are in the repository, and its import name.
FOLDERS = {"csadmin": "csadmin", "csadmin.daemon": "daemon", "csadmin.statemachine": "statemachine"}
LEAVES = {"csadmin", "csadmin.errors", "csadmin.states", "csadmin.protocol", "csadmin.connection", "csadmin.keyfile",
          "csadmin.scenario_limits", "csadmin.scenario_file", "csadmin.rendezvous", "csadmin.pipes", "csadmin.ops",
          "csadmin.opargs", "csadmin.programs"}
# The pure leaves the model may import too (programs: a run's mode and program, which csd checks
# as an op's arguments before the model sees them).
MODEL_LEAVES = {"csadmin", "csadmin.errors", "csadmin.states", "csadmin.scenario_limits", "csadmin.programs"}
CLIENT = {"csadmin.client", "csadmin.transport", "csadmin.follow", "csadmin.credentials", "csadmin.runs",
          "csadmin.inventory", "csadmin.inventory_cache"}


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
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if name in MODULES}


def _of(prefix: str) -> list[str]:
    return [m for m in MODULES if m == prefix or m.startswith(prefix + ".")]


def test_the_model_imports_only_the_shared_leaves():
    for module in _of("csadmin.statemachine"):
        outside = {m for m in _imports(module) if not m.startswith("csadmin.statemachine")}
        assert outside <= MODEL_LEAVES, (module, outside)


def test_the_leaves_import_only_leaves():
    for module in LEAVES - {"csadmin"}:
        assert _imports(module) <= LEAVES, (module, _imports(module))


def test_csd_imports_the_model_and_the_leaves_never_the_client_side():
    for module in _of("csadmin.daemon"):
        outside = {m for m in _imports(module) if not m.startswith(("csadmin.daemon", "csadmin.statemachine"))}
        assert outside <= LEAVES, (module, outside)


def test_the_client_side_never_imports_csd_or_the_model():
    for module in MODULES:
        if module.startswith(("csadmin.daemon", "csadmin.statemachine")):
            continue
        inside = {m for m in _imports(module) if m.startswith(("csadmin.daemon", "csadmin.statemachine"))}
        assert not inside, (module, inside)


def test_the_client_never_imports_the_console():
    for module in CLIENT:
        assert _imports(module) <= CLIENT | LEAVES, (module, _imports(module))
    for module in _of("csadmin.cli"):
        assert not {m for m in _imports(module) if m.startswith(("csadmin.shell", "csadmin.main"))}, module


def test_the_fleet_stands_on_the_client_and_never_imports_the_console():
    for module in _of("csadmin.fleet"):
        outside = {m for m in _imports(module) if not m.startswith("csadmin.fleet")}
        assert outside <= CLIENT | LEAVES, (module, outside)


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
        inside = {m for m in _imports(module) if m.startswith("csadmin.cstorch")}
        if not module.startswith("csadmin.cstorch"):
            assert not inside, (module, inside)
            continue
        outside = {m for m in _imports(module) if not m.startswith("csadmin.cstorch")}
        assert outside <= CLIENT | LEAVES, (module, outside)


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

    for module in _of("csadmin.launch"):
        outside = {m for m in _imports(module) if not m.startswith("csadmin.launch")}
        assert outside <= CLIENT | LEAVES, (module, outside)
    code = ("import sys, csadmin.launch.cpu, csadmin.launch.wse, csadmin.launch.analyzer; "
            "print(sorted(m for m in ('torch', 'h5py', 'numpy', 'csadmin.cstorch') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)
