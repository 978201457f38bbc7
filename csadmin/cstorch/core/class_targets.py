"""Class-index targets of any integer dtype, as the system takes them.

The losses that take class indices (cross_entropy and nll_loss, in 1-d and 2-d; multi_margin_loss;
multilabel_margin_loss) run on the system with integer targets of any width — datasets often
hold labels as int32 or smaller — while PyTorch's CPU kernels want int64 ("expected target dtype
to be Long or Byte, but got Int"). So the capture widens such a target to int64 at the loss op:
the cast is recorded as an op of the program, before the loss, and the loss reads the widened
tensor (its backward too, as autograd saved it). The values are the same class indices, so the
loss is the one an int64 target gives. Eager steps (the CPU and GPU backends) are PyTorch's own,
refusals included, as on the real package.

    args, kwargs = widen_target(func, args, kwargs, cast)   # cast: records target → int64
"""

from __future__ import annotations

from typing import Callable

import torch

aten = torch.ops.aten

CLASS_INDEX_LOSSES = frozenset({
    aten.nll_loss_forward.default, aten.nll_loss_backward.default,
    aten.nll_loss2d_forward.default, aten.nll_loss2d_backward.default,
    aten.multi_margin_loss.default, aten.multi_margin_loss_backward.default,
    aten.multilabel_margin_loss_forward.default, aten.multilabel_margin_loss_backward.default,
})


def widen_target(func, args: tuple, kwargs: dict, cast: Callable[[torch.Tensor], torch.Tensor]):
    """`args` and `kwargs` of `func` with its `target`, when an integer tensor narrower than
    int64 (or unsigned), replaced by `cast(target)`; unchanged for any other op or target."""
    if func not in CLASS_INDEX_LOSSES:
        return args, kwargs
    names = [argument.name for argument in func._schema.arguments]
    index = names.index("target")
    if index < len(args):
        target = args[index]
        if _narrow(target):
            args = (*args[:index], cast(target), *args[index + 1:])
    elif _narrow(kwargs.get("target")):
        kwargs = {**kwargs, "target": cast(kwargs["target"])}
    return args, kwargs


def _narrow(target) -> bool:
    return (isinstance(target, torch.Tensor) and not target.is_floating_point() and not target.is_complex()
            and target.dtype not in (torch.int64, torch.bool))
