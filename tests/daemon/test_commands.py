"""The daemon's command table: every op is one documented module with the same small shape."""

import inspect

from csadmin.shared.opargs import Arg
from csadmin.daemon.commands import COMMANDS

ROLES = {"admin", "operator", "viewer"}


def test_every_command_module_is_complete_and_documented():
    for name, module in COMMANDS.items():
        assert module.SPEC.name == name
        assert module.__doc__ and module.__doc__.startswith(name), f"{name}: docstring must open with the op name"
        assert isinstance(module.SPEC.mutating, bool)
        assert module.SPEC.role in ROLES, name
        assert all(isinstance(spec, Arg) for spec in module.SPEC.args.values()), name
        assert list(inspect.signature(module.execute).parameters) == ["ctx", "args", "caller"], name


def test_state_changes_are_admin_only_and_reads_open_to_viewers():
    for name in ("system.standby", "system.activate", "config.execmode.setup"):
        assert COMMANDS[name].SPEC.role == "admin" and COMMANDS[name].SPEC.mutating
    for name in ("system.show", "config.execmode.show", "events.show", "meta.hello"):
        assert COMMANDS[name].SPEC.role == "viewer" and not COMMANDS[name].SPEC.mutating
