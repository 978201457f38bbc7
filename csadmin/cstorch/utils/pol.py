"""`cstorch.pol(level, bwd_level)` and `cstorch.current_pol()`: the precision optimization level
(POL) of a function's operations, a compiler hint (the real module's; ModelZoo's GPT heads run
their lm_head under `cstorch.pol(bwd_level=0)`, its rotary embeddings ask `current_pol()`).

    logits = cstorch.pol(bwd_level=0)(model.lm_head)(hidden)
    if cstorch.current_pol() >= 1: ...        # inside: the annotation's level, else the backend's

`pol` is a core.annotation of PolConfig (levels None or 0, 1, 2; another is refused, as in the
real package) whose attribute is ("pol", level), the backward pass's `bwd_level` where given; the
function runs unchanged (off the system the annotation warns that it has no effect, as every
annotation does there). `current_pol()` is the level of the innermost active `pol` annotation
that names one, else `cstorch.backends.csx.precision.optimization_level` (default 1). The
system's precision at each level is not modelled: the numbers a step computes are the
numerics contract's (docs/cstorch/numerics.md) at every level.
"""

from dataclasses import dataclass
from typing import Optional

from csadmin.errors import InvalidArgument

from ..backend import current_backend_impl
from ..core.annotation import AnnotationMode, create_annotation


@dataclass
class PolConfig(AnnotationMode.Config):
    """The forward `level` and the backward `bwd_level` (None: the forward's)."""

    level: Optional[int]
    bwd_level: Optional[int]

    def __post_init__(self):
        for name in ("level", "bwd_level"):
            value = getattr(self, name)
            if value is not None and value not in range(0, 3):
                raise InvalidArgument(f"POL must be None or an integer in range [0, 3) but got "
                                      f"{'forward' if name == 'level' else 'backward'} level {value}.")


def get_attribute(config: PolConfig, is_backward: bool) -> AnnotationMode.Attribute:
    """("pol", the level of the pass)."""
    level = config.bwd_level if is_backward and config.bwd_level is not None else config.level
    return AnnotationMode.Attribute("pol", level)


def pol(level: Optional[int] = None, bwd_level: Optional[int] = None, enable_fwd: bool = True,
        enable_bwd: bool = True):
    """A decorator running a function under the POL annotation (see the module docstring)."""
    return create_annotation(PolConfig, get_attribute, level=level, bwd_level=bwd_level, enable_fwd=enable_fwd,
                             enable_bwd=enable_bwd)


def current_pol() -> int:
    """The POL in effect here: the active annotation's level, else the backend's setting."""
    backend = current_backend_impl()
    active = backend.annotations.get(PolConfig)
    if active is not None and active[1].value is not None:
        return active[1].value
    return backend.csx.precision.optimization_level
