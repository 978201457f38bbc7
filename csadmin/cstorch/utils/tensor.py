"""`cstorch.full`, `full_like`, `ones`, `ones_like`, `zeros`, `zeros_like`: tensors of one value,
made for the process's backend.

    mask = cstorch.zeros((seq_len, seq_len), dtype=torch.bool)
    scale = cstorch.full_like(weight, 0.5)       # weight's shape and dtype (dtype= overrides it)

On a CSX backend the tensor is made on the backend's torch device (`cstorch.current_torch_device()`),
whatever torch's default device is; on the real system it is a recipe (shape, dtype, value) the
device fills lazily, so a large one costs no host memory until read. Here the CSX device is this
CPU and the tensor is made filled at once: same shape, dtype and values. Without a CSX backend
(none yet, CPU, GPU) each is exactly torch's function of the same name: torch's default device
applies (inside `with backend.device:`, the backend's), and a `_like` keeps the other tensor's
device. `dtype=None` means torch's choice for `full`/`ones`/`zeros` (full(…, 3) is int64,
full(…, 0.5) the default float) and the other tensor's dtype for a `_like`.
"""

from __future__ import annotations

import torch

from ..backend import current_torch_device, use_cs


def _where() -> dict:
    """The device keyword for a factory: the backend's torch device on CSX; none otherwise
    (torch's default device, or the other tensor's for a `_like`)."""
    return {"device": current_torch_device()} if use_cs() else {}


def full(shape, value, dtype=None) -> torch.Tensor:
    """A tensor of `shape` filled with `value`."""
    return torch.full(shape, value, dtype=dtype, **_where())


def full_like(other: torch.Tensor, value, dtype=None) -> torch.Tensor:
    """A tensor of `other`'s shape (and dtype, unless `dtype` is given) filled with `value`."""
    return torch.full_like(other, value, dtype=dtype or other.dtype, **_where())


def ones(shape, dtype=None) -> torch.Tensor:
    """A tensor of `shape` filled with ones."""
    return torch.ones(shape, dtype=dtype, **_where())


def ones_like(other: torch.Tensor, dtype=None) -> torch.Tensor:
    """A tensor of ones with `other`'s shape (and dtype, unless `dtype` is given)."""
    return torch.ones_like(other, dtype=dtype or other.dtype, **_where())


def zeros(shape, dtype=None) -> torch.Tensor:
    """A tensor of `shape` filled with zeros."""
    return torch.zeros(shape, dtype=dtype, **_where())


def zeros_like(other: torch.Tensor, dtype=None) -> torch.Tensor:
    """A tensor of zeros with `other`'s shape (and dtype, unless `dtype` is given)."""
    return torch.zeros_like(other, dtype=dtype or other.dtype, **_where())
