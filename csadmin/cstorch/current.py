"""The process's one cstorch run, as the rest of cstorch asks about it.

The real system allows one run per process (004: `configure` "can only be called once and applies
globally"), so this state is process-wide on purpose. The runtime (configure, compile,
compile_step) sets it; the library classes (optimizers, schedulers, metrics, the grad scaler)
only read it, through the functions below, so none of them reaches into another's attributes.

    current.execmode()            # "WEIGHT_STREAMING" / "PIPELINED", None before cstorch.compile
    current.in_step()             # True while a compile_step function runs (capture or replay)
    current.check_weights_fetch("model")   # raises on a step that is not a checkpoint step

Stdlib only: importing it never imports torch.
"""

from __future__ import annotations

import contextlib
import itertools
import weakref
from dataclasses import dataclass, field

from csadmin.errors import InvalidState

# 004, "Saving/Loading Checkpoints": weights may be fetched only on configured checkpoint steps.
WEIGHTS_RULE = (
    "It is only possible to fetch weights on predetermined checkpoint steps configured in "
    "cstorch.configure"
)


@dataclass
class RunState:
    """What is known of this process's run so far. `step` counts completed steps (0 before the
    first); `last_step` is the run's final step when the DataLoader knows it."""

    execmode: str | None = None
    checkpoint_steps: int | None = None
    step: int = 0
    last_step: int | None = None
    stepping: bool = False
    extra: dict = field(default_factory=dict)
    announced: weakref.WeakKeyDictionary = field(default_factory=weakref.WeakKeyDictionary)  # object → order


_state = RunState()
_order = itertools.count()  # announcement order, across resets


def state() -> RunState:
    """The run's state (the runtime writes it; everything else should use the functions below)."""
    return _state


def reset() -> None:
    """Forget the run (tests, and `python -m csadmin.cstorch` between scripts)."""
    global _state
    _state = RunState()


def announce(obj) -> None:
    """A library object the run's records describe (an optimizer, a scheduler, a DataLoader)
    says it exists; the model directory's yaml and TensorBoard read them back (`announced`).
    Weakly held: announcing keeps nothing alive."""
    _state.announced.setdefault(obj, next(_order))


def announced(kind: type) -> list:
    """The announced objects that are `kind`s, oldest first."""
    return sorted((o for o in list(_state.announced) if isinstance(o, kind)), key=_state.announced.get)


def execmode() -> str | None:
    """The execution mode `cstorch.compile` targeted, or None before it was called."""
    return _state.execmode


def in_step() -> bool:
    """True while a `compile_step` function runs, at capture or replay."""
    return _state.stepping


@contextlib.contextmanager
def stepping():
    """Mark the body as the inside of a step (the runtime wraps each step in it)."""
    before = _state.stepping
    _state.stepping = True
    try:
        yield
    finally:
        _state.stepping = before


def is_checkpoint_step(step: int | None = None) -> bool:
    """Whether weights may be fetched after `step` (default: the last completed step): before
    any step, on a multiple of `checkpoint_steps`, or on the run's last step."""
    step = _state.step if step is None else step
    if step == 0:
        return True
    if _state.last_step is not None and step == _state.last_step:
        return True
    every = _state.checkpoint_steps
    return bool(every) and step % every == 0


def check_weights_fetch(what: str) -> None:
    """Refuse fetching `what`'s weights (a model's or an optimizer's `state_dict()`) on a step
    that is not a checkpoint step, with the document's rule."""
    if not is_checkpoint_step():
        every = _state.checkpoint_steps
        raise InvalidState(
            f"Cannot fetch the {what}'s weights after step {_state.step}: {WEIGHTS_RULE} "
            f"(checkpoint_steps={every}).",
            hint=f"Fetch weights in a step closure on a step that is a multiple of checkpoint_steps "
                 f"({every}), or on the last step." if every else
                 "Set checkpoint_steps in cstorch.configure, or fetch weights on the last step.",
        )
