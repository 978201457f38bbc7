"""Refuse a core torch.optim optimizer stepped inside a compiled step (004, "Initializing the
Optimizer": the core implementations were designed for eager execution and are incompatible
with traced lazy execution; their Python branches on tensor values and per-step Python state
would be frozen at the captured first step).

The runtime calls `install()` when it captures a step (csadmin/cstorch/step.py, before the
first call of a compiled step; once per process): a global torch optimizer-step pre-hook that
lets every step run outside a compiled step, and inside one only a cstorch.optim.Optimizer's.
"""

from __future__ import annotations

from torch.optim.optimizer import register_optimizer_step_pre_hook

import csadmin.cstorch.current as current
from csadmin.errors import InvalidState

from .optimizer import Optimizer

REASON = ("the core PyTorch optimizers were designed for eager execution and are fundamentally "
          "incompatible with traced lazy execution")

_handle = None


def install() -> None:
    """Register the hook (once per process; calling again does nothing)."""
    global _handle
    if _handle is None:
        _handle = register_optimizer_step_pre_hook(_refuse_core_optimizer)


def uninstall() -> None:
    """Remove the hook (tests)."""
    global _handle
    if _handle is not None:
        _handle.remove()
        _handle = None


def _refuse_core_optimizer(optimizer, args, kwargs) -> None:
    if current.in_step() and not isinstance(optimizer, Optimizer):
        name = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
        raise InvalidState(f"{name} was stepped inside a compiled step: {REASON}.",
                           hint="Use its drop-in replacement in cstorch.optim (e.g. cstorch.optim.SGD, Adam, "
                                "AdamW, or cstorch.optim.configure_optimizer).")
