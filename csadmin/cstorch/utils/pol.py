"""`cstorch.pol` and `cstorch.current_pol()`: the precision optimization level (POL, 0, 1 or 2)
the compiler uses for a function's operations, and the level in force where code runs.

    @cstorch.pol(bwd_level=0)       # this function's backward pass at level 0
    def lm_head(x): ...

    if cstorch.current_pol() >= 1:  # ModelZoo's rotary embeddings compute in a cheaper way at 1 and 2

`pol` is a core.annotation (a compiler hint: the function runs as it is). current_pol() is the
forward level of the innermost active `pol` annotation, else `cstorch.backends.csx.precision.
optimization_level` (default 1), as the real package answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from csadmin.errors import InvalidArgument

from ..backend import process_backend
from ..core.annotation import AnnotationMode, create_annotation


@dataclass
class PolConfig(AnnotationMode.Config):
    """The forward and backward levels (None: the level in force)."""

    level: Optional[int]
    bwd_level: Optional[int]

    def __post_init__(self):
        for name in ("level", "bwd_level"):
            value = getattr(self, name)
            if value is not None and value not in range(0, 3):
                raise InvalidArgument(f"POL must be None or an integer in range [0, 3) but got "
                                      f"{'forward' if name == 'level' else 'backward'} level {value}.")


def get_attribute(config: PolConfig, is_backward: bool):
    """The attribute the annotated operations carry: `pol`, the backward level on the backward pass."""
    level = config.bwd_level if is_backward and config.bwd_level is not None else config.level
    return AnnotationMode.Attribute("pol", level)


def pol(level: Optional[int] = None, bwd_level: Optional[int] = None, enable_fwd: bool = True,
        enable_bwd: bool = True):
    """A decorator that runs a function's operations at POL `level` (`bwd_level` backward)."""
    return create_annotation(PolConfig, get_attribute, level=level, bwd_level=bwd_level, enable_fwd=enable_fwd,
                             enable_bwd=enable_bwd)


def current_pol() -> int:
    """The POL in force here (see the module docstring)."""
    backend = process_backend.current()
    active = backend.annotations.get(PolConfig)
    if active is not None and active[1] is not None and active[1].value is not None:
        return active[1].value
    return backend.csx.precision.optimization_level
