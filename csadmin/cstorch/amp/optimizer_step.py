"""cstorch.amp.optimizer_step: the basic gradient-scaling step in one call (004).

    cstorch.amp.optimizer_step(loss, optimizer, grad_scaler, max_gradient_norm=1.0)

zero_grad, backward of the (scaled) loss, unscale, optional clipping by norm or by value (one of
them), step, update. grad_scaler may be None (no scaling). In pipelined mode a GradScaler's own
max_gradient_norm clips when the call names none (the document: "Only used in pipeline mode").
The clipping value has two spellings, one parameter: the document's `max_gradient_val` and the
product's `max_gradient_value` (R1.8's runner).
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

from ..backend import process_backend

from ..checks import number
from .grad_scaler import GradScaler


def optimizer_step(loss: torch.Tensor, optimizer, grad_scaler: GradScaler | None = None,
                   max_gradient_norm: float | None = None, max_gradient_val: float | None = None,
                   max_gradient_value: float | None = None) -> None:
    """One optimizer step from `loss`; see the module docstring."""
    if max_gradient_val is not None and max_gradient_value is not None:
        raise InvalidArgument("optimizer_step: max_gradient_val and max_gradient_value are one parameter, given "
                              "twice.", "Pass one of them.")
    if max_gradient_value is not None:
        max_gradient_val = max_gradient_value
    if max_gradient_norm is not None and max_gradient_val is not None:
        raise InvalidArgument("optimizer_step: clip by max_gradient_norm or by max_gradient_val, not both.")
    if grad_scaler is not None and not isinstance(grad_scaler, GradScaler):
        raise InvalidArgument(f"optimizer_step: grad_scaler is a {type(grad_scaler).__name__}, not a "
                              "cstorch.amp.GradScaler (or None).")
    if max_gradient_norm is None and grad_scaler is not None and process_backend.current().execmode == "PIPELINED":
        max_gradient_norm = grad_scaler.max_gradient_norm
    optimizer.zero_grad()
    if grad_scaler is None:
        loss.backward()
    else:
        grad_scaler.scale(loss).backward()
        grad_scaler.unscale_(optimizer)
    params = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
    if max_gradient_norm is not None:
        torch.nn.utils.clip_grad_norm_(params, number("optimizer_step", "max_gradient_norm", max_gradient_norm))
    elif max_gradient_val is not None:
        torch.nn.utils.clip_grad_value_(params, number("optimizer_step", "max_gradient_val", max_gradient_val))
    if grad_scaler is None:
        optimizer.step()
    else:
        grad_scaler.step(optimizer)
        grad_scaler.update()
