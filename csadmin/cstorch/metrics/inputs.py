"""What the built-in metrics check of their inputs, and the dtype their state sums in.

The state sums in float64 where the real package's sums in float32: counts stay exact up to
2**53 (float32's stop being exact past 2**24 tokens), so a value is the exact ratio of its counts
and equals plain PyTorch's computed from the same counts. The result is a float64 tensor unless
`update(..., dtype=…)` names another, as the real package's `dtype` does.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

SUM = torch.float64


def tensors(owner: str, **named) -> None:
    """Refuse any of `named` that is not a tensor."""
    for name, value in named.items():
        if not isinstance(value, torch.Tensor):
            raise InvalidArgument(f"{owner}: {name} must be a tensor; got {type(value).__name__}.")


def same_shape(owner: str, labels: torch.Tensor, predictions: torch.Tensor) -> None:
    """Refuse labels and predictions of different shapes (the confusion-matrix metrics' rule)."""
    if labels.shape != predictions.shape:
        raise InvalidArgument(f"{owner}: `labels` and `predictions` have mismatched shapes of {tuple(labels.shape)} "
                              f"and {tuple(predictions.shape)} respectively.",
                              hint="Pass one predicted class per label, e.g. predictions=logits.argmax(-1).")


def weights_like(owner: str, labels: torch.Tensor, weights) -> None:
    """Refuse weights that are not a tensor of the labels' shape."""
    if weights is not None and (not isinstance(weights, torch.Tensor) or weights.shape != labels.shape):
        raise InvalidArgument(f"{owner}: weights must be a tensor of the labels' shape {tuple(labels.shape)}; got "
                              f"{getattr(weights, 'shape', type(weights).__name__)}.",
                              hint="Pass one weight per label (0 masks it out), or None.")


def counted(weights: torch.Tensor | None, labels: torch.Tensor) -> torch.Tensor | int:
    """The tokens a batch counts: every label, or those of positive weight (the real package's rule)."""
    if weights is None:
        return labels.numel()
    return (weights > 0).to(SUM).sum()


def into(total: torch.Tensor, amount) -> None:
    """Add `amount` to the state `total` in place, on the state's device."""
    if isinstance(amount, torch.Tensor):
        amount = amount.detach().to(device=total.device, dtype=total.dtype)
    total.add_(amount)
