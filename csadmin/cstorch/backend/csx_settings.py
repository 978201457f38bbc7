"""`cstorch.backends.csx`: the later releases' settings of the CSX backend, held by the process's
backend (process_backend.Backend.csx), so `process_backend.reset()` forgets them with everything else.

    cstorch.backends.csx.precision.optimization_level = 1      # 0, 1 or 2 (the POL), default 1
    cstorch.backends.csx.performance.micro_batch_size = "auto" # "auto", "explore", a dict, an int ≥ 1, None
    cstorch.backends.csx.debug.retrace_every_iteration = True  # trace every step, refuse a changed graph
    cstorch.backends.csx.debug.execute_crd_memory_gi = 32      # gigaGPT's train.py sets the memory limits

The sections and settings are the real package's (2.4–2.5: precision, performance, cluster,
storage.s3, debug), each with its default; each setting is checked when it is set
(InvalidArgument naming it and what it takes), and a name a section does not have is an
AttributeError listing the ones it has, as on the real package. What they do here:
`retrace_every_iteration` runs the step's Python again at every step and refuses the step whose
graph differs from the first (core/retrace.py); every other setting tunes the appliance (memory
limits of its pods, transfers, weight initialization, the compiler's precision level) that this
simulation has no counterpart for: it is recorded with the compile (compile.log) and changes no
number; `debug.debug_args` and `debug.ini` are the appliance's objects (backend/csx_debug.py).
"""

from __future__ import annotations

from typing import Callable

from csadmin.appliance.utils.debug_args import DebugArgs
from csadmin.errors import InvalidArgument

from .csx_debug import IniView, as_debug_args, ini_options

_MBS_WORDS = ("auto", "explore")
_FABRICS = ("cs2", "cs3")


def _flag(value) -> bool:
    if not isinstance(value, bool):
        raise ValueError("True or False")
    return value


def _positive(value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError("a positive integer")
    return value


def _optional(check: Callable, what: str) -> Callable:
    def optional(value):
        if value is None:
            return None
        try:
            return check(value)
        except ValueError:
            raise ValueError(f"None or {what}") from None
    return optional


def _level(value):
    if isinstance(value, bool) or value not in (0, 1, 2):
        raise ValueError("None or an integer in range [0, 3)")
    return value


def _micro_batch_size(value):
    if (value in _MBS_WORDS or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
            or (isinstance(value, dict) and set(value) <= {"explore"})):
        return value
    raise ValueError("a micro-batch size")


def _text(value) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError("a non-empty string")
    return value


def _fabrics(value) -> list:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not set(value) <= set(_FABRICS):
        raise ValueError(f"None or a list of {', '.join(map(repr, _FABRICS))}")
    return list(value)


_MEMORY = _optional(_positive, "a positive number of GiB")

# section → {setting: (default, check)}; a check returns the value or raises ValueError(what it takes)
SECTIONS: dict[str, dict[str, tuple]] = {
    "precision": {"optimization_level": (1, _optional(_level, "an integer in range [0, 3)"))},
    "performance": {
        "micro_batch_size": ("auto", _optional(_micro_batch_size, "\"auto\", \"explore\", "
                                                                  "{\"explore\": {\"min\": …, \"max\": …}} or a positive integer")),
        "transfer_processes": (5, _positive),
        "max_transfer_bytes": (1 << 30, _positive),
        "compress_weights": (False, _flag),
        "use_speculative_optimizers": (True, _flag),
    },
    "cluster": {"auto_taint": (False, _flag)},
    "storage.s3": {"profile": (None, _optional(_text, "an AWS profile name"))},
    "debug": {
        "retrace_every_iteration": (False, _flag),
        "drop_data": (False, _flag),
        "lazy_initialization": (True, _flag),
        "skip_weight_init": (False, _flag),
        "optimize_initialization": (True, _flag),
        "log_initialization": (True, _flag),
        "implicit_cast_cb16_to_fp32": (False, _flag),
        "save_gpv": (False, _flag),
        "check_constraints": (False, _flag),
        "op_definition_module": (None, _optional(_text, "a module name")),
        "skip_connectivity_check": (False, _flag),
        "fabric_type_blacklist": (None, _optional(_fabrics, "a list of fabric types")),
        **{f"{pod}_memory_gi": (None, _MEMORY) for pod in ("compile_crd", "execute_crd", "wrk", "act", "cmd",
                                                            "wgt", "chf")},
    },
}


class Section:
    """One section's settings (SECTIONS[name]), as attributes checked when set."""

    def __init__(self, name: str):
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_values", {k: default for k, (default, _) in SECTIONS[name].items()})

    def __getattr__(self, name: str):
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(self._unknown(name))

    def __setattr__(self, name: str, value) -> None:
        table = SECTIONS[self._name]
        if name not in table:
            raise AttributeError(self._unknown(name))
        try:
            self._values[name] = table[name][1](value)
        except ValueError as exc:
            raise InvalidArgument(f"cstorch.backends.csx.{self._name}.{name} must be {exc}, not {value!r}.",
                                  hint=f"Its default is {table[name][0]!r}.") from None

    def _unknown(self, name: str) -> str:
        return (f"cstorch.backends.csx.{self._name} has no setting {name!r}; its settings are "
                f"{', '.join(SECTIONS[self._name])}.")

    def __repr__(self) -> str:
        return f"{self._name}({', '.join(f'{k}={v!r}' for k, v in self._values.items())})"

    def settings(self) -> dict:
        """The settings changed from their defaults (the run's records)."""
        return {k: v for k, v in self._values.items() if v != SECTIONS[self._name][k][0] or k in _ALWAYS}


_ALWAYS = ("optimization_level", "micro_batch_size")  # recorded even at their defaults


class DebugSection(Section):
    """The `debug` section: its settings, and the appliance's `debug_args` with its `ini` view
    (backend/csx_debug.py), one fresh DebugArgs per section."""

    def __init__(self):
        super().__init__("debug")
        object.__setattr__(self, "_debug_args", DebugArgs())

    def __getattr__(self, name: str):
        if name == "debug_args":
            return object.__getattribute__(self, "_debug_args")
        if name == "ini":
            return IniView(object.__getattribute__(self, "_debug_args"))
        return super().__getattr__(name)

    def __setattr__(self, name: str, value) -> None:
        if name == "debug_args":
            object.__setattr__(self, "_debug_args", as_debug_args(value))
        elif name == "ini":
            options = ini_options(value)
            debug_args = DebugArgs()
            for option, set_to in options.items():
                setattr(IniView(debug_args), option, set_to)
            object.__setattr__(self, "_debug_args", debug_args)
        else:
            super().__setattr__(name, value)

    def settings(self) -> dict:
        held = self._debug_args.settings()
        return {**super().settings(), **({"debug_args": held} if held else {})}


class Storage:
    """`cstorch.backends.csx.storage`: its `s3` section."""

    def __init__(self):
        self.s3 = Section("storage.s3")


class CsxSettings:
    """The sections, as `cstorch.backends.csx` shows them."""

    __slots__ = ("precision", "performance", "cluster", "storage", "debug")

    def __init__(self):
        self.precision = Section("precision")
        self.performance = Section("performance")
        self.cluster = Section("cluster")
        self.storage = Storage()
        self.debug = DebugSection()

    def settings(self) -> dict:
        """The settings worth recording, by section (the compile log)."""
        sections = {"precision": self.precision, "performance": self.performance, "cluster": self.cluster,
                    "storage.s3": self.storage.s3, "debug": self.debug}
        return {name: values for name, section in sections.items() if (values := section.settings())}
