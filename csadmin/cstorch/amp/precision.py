"""Mixed precision as the system does it (001, "Floating Point Precision"): weights are stored as
float32, and everything but the weight update computes in a half type, float16 unless
`use_bfloat16(True)`. `autocast()` is torch's CPU autocast to that type, which inserts the casts
(001: "you do not need to insert them manually"): compile_step captures every step under it, so
a step need not enter it (doing so again is harmless). The update stays float32 because the
optimizers' elementwise ops are not among the ops autocast casts. `check_float32_weights(model)`
(cstorch.compile calls it) refuses a model whose weights are not float32.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.state as state


def use_bfloat16(use: bool) -> None:
    """Compute in bfloat16 instead of float16 (call before the first step: a compiled program
    keeps the precision it was captured in). The setting is the backend's (state.py)."""
    if not isinstance(use, bool):
        raise InvalidArgument(f"use_bfloat16 takes True or False, not {use!r}.")
    state.current().half_dtype = "bfloat16" if use else "float16"


def half_dtype() -> torch.dtype:
    """The half type the step computes in."""
    return getattr(torch, state.current().half_dtype)


def autocast() -> torch.autocast:
    """The context every step is captured in: CPU autocast to `half_dtype()`."""
    return torch.autocast("cpu", dtype=half_dtype())


def check_float32_weights(module: torch.nn.Module) -> None:
    """Refuse a model whose floating-point parameters are not float32."""
    other = [(name, p.dtype) for name, p in module.named_parameters() if p.is_floating_point() and p.dtype != torch.float32]
    if other:
        name, dtype = other[0]
        raise InvalidArgument(
            f"Only mixed precision is supported: weights are stored as float32, but {name} is {dtype} "
            f"({len(other)} such parameters).",
            hint="Keep the model in float32 (model.float()); the half-precision casts are inserted for you.")
