"""`cstorch.backends.csx.debug`'s two appliance objects: `debug_args` and its INI view `ini`.

As on the real package, `debug_args` is the appliance's DebugArgs (cerebras.appliance.utils
.debug_args: here its INI options) and `ini` shows those options as attributes, reading and
writing that same object:

    cstorch.backends.csx.debug.debug_args.MergeFrom(get_debug_args(path))   # ModelZoo's DebugArgsPath
    cstorch.backends.csx.debug.ini.ws_rt_skip_bwd_pass_nancheck = True      # ModelZoo's NaN checker
    del cstorch.backends.csx.debug.ini.ws_rt_skip_bwd_pass_nancheck

Setting `debug_args` takes a DebugArgs or a dict of its fields (`{"ini": {"bools": {...}}}`, as
ModelZoo's runconfig spells them); setting `ini` takes an INI or a dict of options. Either
replaces the options held. Like the other debug settings they are recorded with the compile and
change no number here.
"""

from __future__ import annotations

from csadmin.appliance.utils.debug_args import DebugArgs, update_debug_args_from_keys
from csadmin.appliance.utils.ini import INI, get_supported_type_maps
from csadmin.errors import InvalidArgument


def as_debug_args(value) -> DebugArgs:
    """A fresh DebugArgs holding `value`'s options (a DebugArgs or a dict of its fields)."""
    made = DebugArgs()
    if isinstance(value, DebugArgs):
        made.MergeFrom(value)
    elif isinstance(value, dict):
        update_debug_args_from_keys(made, value)
    else:
        raise InvalidArgument(f"cstorch.backends.csx.debug.debug_args must be a DebugArgs or a dict of its "
                              f"fields, not {value!r}.", hint="e.g. {'ini': {'bools': {'NAME': True}}}.")
    return made


def ini_options(value) -> dict:
    """The options of `value` (an INI or a dict of name → bool, int, float or str), checked."""
    if isinstance(value, INI):
        return dict(value)
    if isinstance(value, dict):
        try:
            return dict(INI(**value))
        except TypeError as exc:
            raise InvalidArgument(f"cstorch.backends.csx.debug.ini: {exc}.",
                                  hint="An INI option is a bool, int, float or str.") from None
    raise InvalidArgument(f"cstorch.backends.csx.debug.ini must be an INI or a dict of options, not {value!r}.")


class IniView:
    """The INI options of one DebugArgs, as attributes (a name unset is an AttributeError)."""

    __slots__ = ("_debug_args",)

    def __init__(self, debug_args: DebugArgs):
        object.__setattr__(self, "_debug_args", debug_args)

    def _maps(self) -> dict:
        return get_supported_type_maps(self._debug_args)

    def __getattr__(self, name: str):
        for values in self._maps().values():
            if name in values:
                return values[name]
        raise AttributeError(f"no INI option {name!r} is set")

    def __setattr__(self, name: str, value) -> None:
        maps = self._maps()
        if type(value) not in maps:
            raise InvalidArgument(f"cstorch.backends.csx.debug.ini.{name}: an INI option is a bool, int, float "
                                  f"or str, not {value!r}.")
        self.__delattr__(name, missing_ok=True)
        maps[type(value)][name] = value

    def __delattr__(self, name: str, missing_ok: bool = False) -> None:
        found = [values for values in self._maps().values() if values.pop(name, None) is not None]
        if not found and not missing_ok:
            raise AttributeError(f"no INI option {name!r} is set")

    def __iter__(self):
        for values in self._maps().values():
            yield from values.items()

    def __repr__(self) -> str:
        return f"INI({', '.join(f'{k}={v!r}' for k, v in self)})"
