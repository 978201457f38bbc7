"""`cstorch.backends.csx`: the later releases' settings of the CSX backend, held by the process's
backend (state.Backend.csx), so `state.reset()` forgets them with everything else.

    cstorch.backends.csx.precision.optimization_level = 1      # 0, 1 or 2 (the POL), default 1
    cstorch.backends.csx.performance.micro_batch_size = "auto" # "auto", "explore", a dict, an int ≥ 1, None
    cstorch.backends.csx.debug.retrace_every_iteration = True  # trace every step, refuse a changed graph

Each setting is checked when it is set (InvalidArgument naming it and what it takes); a name the
section does not have is an AttributeError listing the ones it has, as a typo would be on the
real package. What they do here: the precision level and the micro-batch size are recorded with
the compile (compile.log and the run's yaml: this simulation computes with PyTorch's numerics,
so they change no number); `retrace_every_iteration` runs the step's Python again at every step
and refuses the step whose graph differs from the first (retrace.py). Stdlib only.
"""

from __future__ import annotations

from csadmin.errors import InvalidArgument

_MBS_WORDS = ("auto", "explore")


class _Section:
    """Settings of one section: `_defaults` names them; each is checked by `_check_<name>`."""

    _defaults: dict = {}

    def __init__(self):
        for name, value in self._defaults.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        if name not in self._defaults:
            raise AttributeError(f"cstorch.backends.csx.{self._name} has no setting {name!r}; its settings are "
                                 f"{', '.join(self._defaults)}.")
        object.__setattr__(self, name, getattr(self, f"_check_{name}")(value))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)!r}' for k in self._defaults)})"

    def settings(self) -> dict:
        """The section's values, for the run's records."""
        return {name: getattr(self, name) for name in self._defaults}


class Precision(_Section):
    _name = "precision"
    _defaults = {"optimization_level": 1}

    @staticmethod
    def _check_optimization_level(value):
        if value is not None and (isinstance(value, bool) or value not in (0, 1, 2)):
            raise InvalidArgument(f"cstorch.backends.csx.precision.optimization_level must be None or an integer in "
                                  f"range [0, 3), not {value!r}.",
                                  hint="Use 0, 1 (the default) or 2.")
        return value


class Performance(_Section):
    _name = "performance"
    _defaults = {"micro_batch_size": "auto"}

    @staticmethod
    def _check_micro_batch_size(value):
        ok = (value is None or value in _MBS_WORDS
              or (isinstance(value, int) and not isinstance(value, bool) and value >= 1)
              or (isinstance(value, dict) and set(value) <= {"explore"}))
        if not ok:
            raise InvalidArgument(f"cstorch.backends.csx.performance.micro_batch_size must be \"auto\", \"explore\", "
                                  f"{{\"explore\": {{\"min\": …, \"max\": …}}}}, a positive integer or None, not "
                                  f"{value!r}.")
        return value


class Debug(_Section):
    _name = "debug"
    _defaults = {"retrace_every_iteration": False}

    @staticmethod
    def _check_retrace_every_iteration(value):
        if not isinstance(value, bool):
            raise InvalidArgument(f"cstorch.backends.csx.debug.retrace_every_iteration must be True or False, "
                                  f"not {value!r}.")
        return value


class CsxSettings:
    """The three sections, as `cstorch.backends.csx` shows them."""

    __slots__ = ("precision", "performance", "debug")

    def __init__(self):
        self.precision = Precision()
        self.performance = Performance()
        self.debug = Debug()

    def settings(self) -> dict:
        """Every setting, by section (the run's yaml)."""
        return {name: getattr(self, name).settings() for name in self.__slots__}
