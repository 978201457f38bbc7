"""`python -m csadmin.cstorch SCRIPT [ARGS...]`: run an unmodified cstorch script against csd.

SCRIPT is a file (`train.py`) or the name of an installed console script (`cszoo fit
params.yaml`: ModelZoo's entry point, found as an entry point of an installed distribution, or
as a Python script on PATH).

The script's `import cerebras_pytorch.experimental as cstorch` (R1.8), `import cerebras_pytorch
as cstorch` (2.0–2.1) or `import cerebras.pytorch as cstorch` (later), and their submodules
(`.metrics`, `.optim`, `.utils.data`, `.utils.tensorboard`, `.distributed`, `.backends`, ...),
get csadmin.cstorch: every module of the package is registered under each name in this process's
sys.modules before the script runs as `__main__`. `cerebras_pytorch` is a package holding
csadmin.cstorch's names plus `experimental` (csadmin.cstorch's names with R1.8's compile) and the
R1.8 wheel's other names ModelZoo 1.8 imports (`state()`, `env()`, `nn`, `core.cb_model`,
`core.modes`, `utils.extract_loss`, `cerebras_appliance.environment`, `…pb.stack.autogen_pb2`:
core/r18/). `cerebras` is left open: where a distribution installs
into the `cerebras` namespace (ModelZoo's `cerebras.modelzoo`), that namespace is imported as
usual and only `cerebras.pytorch` is added to it; where none does, `cerebras` is an empty package.
The names R1.8 scripts import from `cerebras_appliance` for configure (ExecutionStrategy,
DebugArgs, get_debug_args) are csadmin.cstorch.backend.appliance, registered the same way; the
later releases' `cerebras.appliance` (storage, log, errors, ...) is csadmin.appliance. Every
module made here has a `__spec__`, so `importlib.util.find_spec(name)` answers for it as for an
installed one.

Python processes the script starts import the same names: ModelZoo R1.8's `--mode eval_all` and
`--mode train_and_eval` run `sys.executable run.py ...` once per checkpoint or round. The runner
puts csadmin/cstorch/_site on their PYTHONPATH, where a stand-in package of each name
(`cerebras_pytorch`, `cerebras_appliance`, `cerebras.pytorch`, `cerebras.appliance`) prepares
that process as this one is (`prepare`) and gives way to the registered module.

A launcher may give the process an input-only role through its environment (an input worker task
of csrun_wse, a cs_input_analyzer task; utils/data/_utils/roles.py): the script then runs up to
its DataLoader, and this runner serves the role with the script's input function.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import pkgutil
import runpy
import shutil
import sys
import types

from csadmin.errors import CsError, InvalidState

ALIASES = ("cerebras_pytorch.experimental", "cerebras_pytorch", "cerebras.pytorch")
# The stand-in packages a process the script starts imports (see the module docstring).
SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_site")
USAGE = "usage: python -m csadmin.cstorch SCRIPT|CONSOLE_SCRIPT [ARGS...]"


def package_module(name: str, doc: str) -> types.ModuleType:
    """An empty package named `name`, with the spec an installed one has (loader None, no
    locations: nothing more is found inside it but what is registered under it)."""
    module = types.ModuleType(name, doc)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    module.__spec__.submodule_search_locations = []
    module.__path__ = []
    module.__package__ = name
    return module


def _cerebras_namespace() -> types.ModuleType:
    """The `cerebras` package: the installed namespace where a distribution provides one (so its
    other members import as usual), else an empty package of our own."""
    if "cerebras" not in sys.modules and importlib.util.find_spec("cerebras") is not None:
        importlib.import_module("cerebras")
    return sys.modules.setdefault("cerebras", package_module(
        "cerebras", "the namespace of the later releases' cerebras.pytorch"))


def alias_modules() -> list[str]:
    """Import every csadmin.cstorch module and register it under each alias; return the names."""
    import csadmin.cstorch as package

    names = ["csadmin.cstorch"]
    for info in pkgutil.walk_packages(package.__path__, "csadmin.cstorch."):
        if not info.name.endswith(".__main__"):
            importlib.import_module(info.name)
            names.append(info.name)
    top = package_module("cerebras_pytorch", "csadmin.cstorch under the name the real API has")
    top.__dict__.update({k: v for k, v in vars(package).items() if not k.startswith("__")})
    from csadmin.cstorch.core import r18  # the R1.8 wheel's names around experimental (ModelZoo 1.8's)

    top.experimental = _extended("cerebras_pytorch.experimental", package, r18.EXPERIMENTAL)
    top.__dict__.update(r18.TOP_LEVEL)
    top.core = _extended("cerebras_pytorch.core", package.core, r18.CORE)
    top.utils = _extended("cerebras_pytorch.utils", package.utils, r18.UTILS)
    sys.modules.setdefault("cerebras_pytorch", top)
    _cerebras_namespace().pytorch = package  # `import a.b as c` looks `b` up as an attribute of `a`
    made = []
    for alias in ALIASES:
        for name in names:
            aliased = alias + name[len("csadmin.cstorch"):]
            if aliased not in r18.MODULES:  # R1.8's own module of that name (cerebras_pytorch.nn) is its
                sys.modules.setdefault(aliased, sys.modules[name])
                made.append(aliased)
    from csadmin.cstorch.backend import appliance  # what scripts pass to configure from cerebras_appliance

    for name in appliance.ALIASES:
        made += _register(name, appliance)
    for name, module in r18.MODULES.items():
        made += _register(name, module)
    sys.modules["cerebras_appliance"].__dict__.update(r18.APPLIANCE)
    return made + _appliance_package()


def _appliance_package() -> list[str]:
    """Register csadmin.appliance and each module of it as `cerebras.appliance[.X]` (the later
    releases' appliance package, which ModelZoo 2.x imports), with the log levels the real one
    adds on import; return the names."""
    import csadmin.appliance as package
    from csadmin.appliance import log

    made = _register("cerebras.appliance", package)
    for info in pkgutil.walk_packages(package.__path__, "csadmin.appliance."):
        made += _register("cerebras" + info.name[len("csadmin"):], importlib.import_module(info.name))
    log.register_levels()
    return made


def _extended(name: str, module: types.ModuleType, extra: dict) -> types.ModuleType:
    """A package `name` holding `module`'s names plus `extra` (a module among them is registered
    as `name.key` too): R1.8's packages that hold more than ours (`cerebras_pytorch.core`)."""
    made = package_module(name, module.__doc__)
    made.__dict__.update({k: v for k, v in vars(module).items() if not k.startswith("__")})
    made.__dict__.update(extra)
    for key, sub in extra.items():
        if isinstance(sub, types.ModuleType):
            sys.modules.setdefault(f"{name}.{key}", sub)
    return sys.modules.setdefault(name, made)


def _register(name: str, module: types.ModuleType) -> list[str]:
    """Register `module` as `name`, with its parent packages (empty ones) as far as they are
    missing, each the attribute of its parent (`import a.b.c as x` reads attributes); return the
    names registered."""
    made = []
    parts = name.split(".")
    parent = None
    for depth in range(1, len(parts) + 1):
        here = ".".join(parts[:depth])
        if here not in sys.modules:
            sys.modules[here] = module if depth == len(parts) else package_module(here, f"the package of {name}")
            made.append(here)
        if parent is not None:
            setattr(parent, parts[depth - 1], sys.modules[here])
        parent = sys.modules[here]
    return made


def prepare() -> None:
    """Make this process one a script runs in: every alias registered, and torch 2.13's pytree
    specs taking the field names ModelZoo 2.x replaces them by (torch_compat)."""
    alias_modules()
    from csadmin.cstorch import torch_compat

    torch_compat.accept_dataclass_fields()


def stand_in(name: str) -> None:
    """What the _site package `name` does when a process the script started imports it: prepare
    the process and leave `name` to the module registered under it."""
    del sys.modules[name]  # the stand-in itself: registration puts the real alias in its place
    prepare()
    if name not in sys.modules:
        raise ImportError(f"python -m csadmin.cstorch registers no module {name!r}", name=name)


def _console_script(name: str):
    """(how to run it, its file) for the console script `name`: an installed distribution's entry
    point, else a Python script on PATH; None when there is neither."""
    for entry in importlib.metadata.entry_points(group="console_scripts", name=name):
        return entry.load, getattr(entry.dist, "name", name)
    path = shutil.which(name)
    if path is not None:
        with open(path, "rb") as f:
            first = f.readline()
        if first.startswith(b"#!") and b"python" in first:
            return None, path
    return None


def _run(target: str, argv: list[str]) -> None:
    """Run the script file or console script `target` as `__main__` with sys.argv = argv."""
    sys.argv = list(argv)
    if os.path.isfile(target):
        sys.path.insert(0, os.path.dirname(os.path.abspath(target)))
        runpy.run_path(target, run_name="__main__")
        return
    load, where = _console_script(target)
    if load is None:
        runpy.run_path(where, run_name="__main__")
        return
    code = load()()  # console scripts return their exit status, or exit with it
    if code:
        raise SystemExit(code)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + __doc__.split("\n\n")[1], file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    target = argv[0]
    if not os.path.isfile(target) and _console_script(target) is None:
        print(f"python -m csadmin.cstorch: no such script or console script: {target}\n{USAGE}", file=sys.stderr)
        return 2
    prepare()
    inherited = filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))
    os.environ["PYTHONPATH"] = os.pathsep.join([SITE, *inherited])  # for the processes the script starts
    from csadmin.cstorch.backend import process_backend
    from csadmin.cstorch.utils.data._utils import roles

    backend = process_backend.current()
    backend.input_role = role = roles.from_environment()
    name = os.path.basename(target)
    try:
        try:
            _run(target, argv)
        except roles.InputTaken as taken:
            return role.serve(taken.input_fn, taken.args, taken.kwargs, backend)
        if role is not None:
            raise InvalidState(f"this process is a {role.name}, but the script ended without constructing "
                               "cstorch.utils.data.DataLoader(input_fn, ...).",
                               "Construct the script's DataLoader unconditionally, before its training loop.")
    except CsError as exc:  # a refusal is the script's answer, said as `cs` says it: no traceback
        print(f"{name}: {exc.code}: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
