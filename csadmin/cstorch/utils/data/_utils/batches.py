"""Batches as the DataLoader and its input workers see them: their tensors, and an input
restarted each time it runs out."""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

EMPTY = "the input function's dataloader yielded no batch."
EMPTY_HINT = "With drop_last=True, the dataset must hold at least one full batch."


def repeated(loader):
    """The input's batches, started again each time it runs out (a fresh pass: reshuffled)."""
    while True:
        empty = True
        for batch in loader:
            empty = False
            yield batch
        if empty:
            raise InvalidArgument(f"DataLoader: {EMPTY}", hint=EMPTY_HINT)


def tensors(batch) -> list[torch.Tensor]:
    """The tensors of a batch (a tensor, or dicts/lists/tuples of them), in order."""
    if isinstance(batch, torch.Tensor):
        return [batch]
    if isinstance(batch, dict):
        return [t for value in batch.values() for t in tensors(value)]
    if isinstance(batch, (list, tuple)):
        return [t for value in batch for t in tensors(value)]
    return []


def samples_of(batch) -> int:
    """A batch's samples: the first dimension of its first tensor that has one (0 if none)."""
    sizes = [t.shape[0] for t in tensors(batch) if t.dim()]
    return sizes[0] if sizes else 0
