"""What every optimizer shares: its zeroed state, the parameters a step updates, the gradient it
reads and the descent it applies.

The learning rate is a Python number until a scheduler makes it a 0-d tensor (which it then
writes in place every step), so each descent has two spellings with the same numbers: torch's
scalar forms (`add_(alpha=…)`, `addcdiv_(value=…)`) for a number, and a tensor product for a
tensor, which the captured program reads afresh at every replay.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument


def zeros(p: torch.Tensor) -> torch.Tensor:
    """A state tensor for `p`: zeros of its shape, dtype, device and memory format."""
    return torch.zeros_like(p, memory_format=torch.preserve_format)


def with_gradients(params):
    """The parameters of `params` that have a gradient: the ones a step updates. Static: which
    parameters get a gradient never changes from step to step, so the captured program skips
    the same ones at every replay."""
    return (p for p in params if p.grad is not None)


def gradient(owner: str, p: torch.Tensor, maximize: bool = False) -> torch.Tensor:
    """`p`'s gradient, negated with `maximize` (a new tensor then; p.grad itself is never changed).
    A sparse gradient is refused: every update here is dense, as the real classes' are."""
    grad = p.grad
    if grad.is_sparse:
        raise InvalidArgument(f"{owner} does not support sparse gradients.",
                              hint="Use a dense gradient (e.g. nn.Embedding(sparse=False)).")
    return -grad if maximize else grad


def descend(p: torch.Tensor, update: torch.Tensor, lr, scratch: bool = False) -> None:
    """p -= lr * update, with lr a number or (scheduled) a 0-d tensor. `scratch`: `update` is the
    caller's own temporary, so lr * update may be formed in it (the same numbers, no new tensor)."""
    if isinstance(lr, torch.Tensor):
        p.sub_(update.mul_(lr) if scratch else update * lr)
    else:
        p.add_(update, alpha=-lr)


def descend_ratio(p: torch.Tensor, numerator: torch.Tensor, denominator: torch.Tensor, lr) -> None:
    """p -= lr * numerator / denominator (torch's `addcdiv_(…, value=-lr)` for a number lr)."""
    if isinstance(lr, torch.Tensor):
        p.sub_(torch.div(numerator, denominator).mul_(lr))
    else:
        p.addcdiv_(numerator, denominator, value=-lr)


def decay_off(decay) -> bool:
    """Whether a weight decay is off: a Python 0. A scheduled decay (a 0-d tensor, written in
    place by optim.weight_decay_scheduler) is always applied, with no branch on its value, so the
    captured step replays whatever the schedule writes (0 included: the same numbers)."""
    return not isinstance(decay, torch.Tensor) and decay == 0


def with_l2(grad: torch.Tensor, p: torch.Tensor, decay) -> torch.Tensor:
    """grad + decay * p (the L2 term of torch's `weight_decay`), a new tensor; grad itself when
    the decay is off."""
    if decay_off(decay):
        return grad
    if isinstance(decay, torch.Tensor):
        return grad + p * decay
    return grad.add(p, alpha=decay)


def decoupled_decay(p: torch.Tensor, lr, decay) -> None:
    """p *= 1 - lr * decay (AdamW's and Lion's decoupled weight decay), unless the decay is off."""
    if not decay_off(decay):
        p.mul_(1 - lr * decay)
