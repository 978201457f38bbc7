"""`python -m csadmin.cstorch SCRIPT [ARGS...]`: run an unmodified cstorch script against csd.

The script's `import cerebras_pytorch.experimental as cstorch` (R1.8), `import cerebras_pytorch
as cstorch` (2.0–2.1) or `import cerebras.pytorch as cstorch` (later), and their submodules
(`.metrics`, `.optim`, `.utils.data`, `.utils.tensorboard`, `.distributed`, `.backends`, ...),
get csadmin.cstorch: every module of the package is registered under each name in this process's
sys.modules before the script runs as `__main__`. `cerebras_pytorch` is a module holding
csadmin.cstorch's names plus `experimental`, and `cerebras` a namespace holding `pytorch`
(`import a.b as c` looks `b` up as an attribute of `a`). The names R1.8 scripts import from
`cerebras_appliance` for configure (ExecutionStrategy, DebugArgs, get_debug_args) are
csadmin.cstorch.backend.appliance, registered the same way. Nothing named cerebras is installed; other
processes see nothing.

A launcher may give the process an input-only role through its environment (an input worker task
of csrun_wse, a cs_input_analyzer task; utils/data/_utils/roles.py): the script then runs up to
its DataLoader, and this runner serves the role with the script's input function.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import runpy
import sys
import types

from csadmin.errors import CsError, InvalidState

ALIASES = ("cerebras_pytorch.experimental", "cerebras_pytorch", "cerebras.pytorch")
USAGE = "usage: python -m csadmin.cstorch SCRIPT [ARGS...]"


def alias_modules() -> list[str]:
    """Import every csadmin.cstorch module and register it under each alias; return the names."""
    import csadmin.cstorch as package

    names = ["csadmin.cstorch"]
    for info in pkgutil.walk_packages(package.__path__, "csadmin.cstorch."):
        if not info.name.endswith(".__main__"):
            importlib.import_module(info.name)
            names.append(info.name)
    top = types.ModuleType("cerebras_pytorch", "csadmin.cstorch under the name the real API has")
    top.__dict__.update({k: v for k, v in vars(package).items() if not k.startswith("__")})
    top.__path__ = []  # a package: its submodules are the aliases below
    top.experimental = package
    sys.modules.setdefault("cerebras_pytorch", top)
    namespace = types.ModuleType("cerebras", "the namespace of the later releases' cerebras.pytorch")
    namespace.__path__ = []
    namespace.pytorch = package
    sys.modules.setdefault("cerebras", namespace)
    made = []
    for alias in ALIASES:
        for name in names:
            aliased = alias + name[len("csadmin.cstorch"):]
            sys.modules.setdefault(aliased, sys.modules[name])
            made.append(aliased)
    from csadmin.cstorch.backend import appliance  # what scripts pass to configure from cerebras_appliance

    return made + appliance.alias()


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\n\n" + __doc__.split("\n\n")[1], file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    script = argv[0]
    if not os.path.isfile(script):
        print(f"python -m csadmin.cstorch: no such script: {script}\n{USAGE}", file=sys.stderr)
        return 2
    alias_modules()
    from csadmin.cstorch.backend import process_backend
    from csadmin.cstorch.utils.data._utils import roles

    backend = process_backend.current()
    backend.input_role = role = roles.from_environment()
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    name = os.path.basename(script)
    try:
        try:
            runpy.run_path(script, run_name="__main__")
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
