"""Refuse a core torch.optim optimizer stepped inside a compiled step (004, "Initializing the
Optimizer": the core implementations were designed for eager execution and are incompatible
with traced lazy execution; their Python branches on tensor values and per-step Python state
would be frozen at the captured first step).

The compile of a run's first step (core/compiler.py) calls `install(backend)`: a global torch
optimizer-step pre-hook that lets every step run outside a compiled step, and inside one only a
cstorch.optim.Optimizer's.
The backend keeps the hook's handle, and removes it when it is closed (process_backend.reset()).
"""

from __future__ import annotations

from torch.optim.optimizer import register_optimizer_step_pre_hook

from csadmin.errors import InvalidState

from ..backend import process_backend
from .optimizer import Optimizer

REASON = ("the core PyTorch optimizers were designed for eager execution and are fundamentally "
          "incompatible with traced lazy execution")


def install(backend: process_backend.Backend) -> None:
    """Register the hook for `backend` (once; calling again does nothing)."""
    if backend.optimizer_guard is None:
        backend.optimizer_guard = register_optimizer_step_pre_hook(_refuse_core_optimizer)


def _refuse_core_optimizer(optimizer, args, kwargs) -> None:
    if process_backend.current().in_step() and not isinstance(optimizer, Optimizer):
        name = f"{type(optimizer).__module__}.{type(optimizer).__qualname__}"
        raise InvalidState(f"{name} was stepped inside a compiled step: {REASON}.",
                           hint="Use its drop-in replacement in cstorch.optim (e.g. cstorch.optim.SGD, Adam, "
                                "AdamW, or cstorch.optim.configure_optimizer).")
