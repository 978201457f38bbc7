"""`cerebras.appliance.utils.ini`: INI options in DebugArgs (ModelZoo sets its default INIs with
set_default_ini). INI is a namespace of option values, each a bool, int, float or str, the type
choosing the map of DebugArgs.ini it goes to."""

from __future__ import annotations

from types import SimpleNamespace

from .debug_args import DebugArgs


def get_supported_type_maps(debug_args: DebugArgs) -> dict:
    """DebugArgs.ini's maps by the Python type of the values they hold."""
    return {bool: debug_args.ini.bools, int: debug_args.ini.ints, float: debug_args.ini.floats,
            str: debug_args.ini.strings}


class INI(SimpleNamespace):
    """INI option values; setting one of another type than bool, int, float or str raises."""

    def __setattr__(self, name, value):
        if not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"INI expected bool, int, float, or str for `{name}`. Got {value}")
        super().__setattr__(name, value)

    def __iter__(self):
        yield from self.__dict__.items()

    def propagate(self, debug_args: DebugArgs, override: bool = True) -> None:
        """Put these values in `debug_args` (override False: only those not already there)."""
        maps = get_supported_type_maps(debug_args)
        for key, value in self.__dict__.items():
            if key not in maps[type(value)] or override:
                maps[type(value)][key] = value

    def clear(self, debug_args: DebugArgs) -> None:
        """Remove these options from `debug_args`, whatever their type there."""
        for key in self.__dict__:
            for values in get_supported_type_maps(debug_args).values():
                values.pop(key, None)

    def merge_from(self, debug_args: DebugArgs) -> None:
        """Take every option of `debug_args`."""
        for values in get_supported_type_maps(debug_args).values():
            self.__dict__.update(values)


def set_ini(debug_args: DebugArgs, **kwargs) -> None:
    """Set the options `kwargs` in `debug_args`."""
    INI(**kwargs).propagate(debug_args, override=True)


def set_default_ini(debug_args: DebugArgs, **kwargs) -> None:
    """Set those of `kwargs` that `debug_args` does not set yet."""
    INI(**kwargs).propagate(debug_args, override=False)


def clear_ini(debug_args: DebugArgs, *args, **kwargs) -> None:
    """Remove the options named in `args` and `kwargs` from `debug_args`."""
    INI(**{a: False for a in args}, **kwargs).clear(debug_args)
