"""cstorch.sparse.init: how a sparse parameter's mask is first made (the real module's methods).

Each takes the parameter and its sparsity level (a 0-d tensor) and returns a bool mask of its
shape, True where the weight is kept: `random` (the top k of uniform random scores: a random
pattern of exactly that sparsity), `topk` (keeps the largest magnitudes), `from_zeros` (the
weights' own zeros are the pruned ones; the level is not honoured) and `checkerboard` (the kept
entries spread evenly along each row, rolled from row to row). `make_init_method` takes one of
their names or a function of the same signature.
"""

import math
from typing import Callable, Optional, Union

import torch

from csadmin.errors import InvalidArgument

from .utils import make_mask_topk_sparsity

InitMethodCallable = Callable[..., torch.Tensor]
InitMethodType = Union[str, InitMethodCallable]


def random(p: torch.Tensor, sparsity: torch.Tensor, score_shaper=None, device: Optional[torch.device] = None):
    """A uniformly random pattern of the given sparsity."""
    score = torch.rand_like(p, device=device or p.device, dtype=torch.float32)
    return make_mask_topk_sparsity(score, sparsity, score_shaper)


def topk(p: torch.Tensor, sparsity: torch.Tensor, score_shaper=None, device: Optional[torch.device] = None):
    """Prune the lowest-magnitude weights."""
    return make_mask_topk_sparsity(p.detach().to(device or p.device).abs(), sparsity, score_shaper)


def from_zeros(p: torch.Tensor, sparsity: torch.Tensor, score_shaper=None, device: Optional[torch.device] = None):
    """The weights that are zero now are the pruned ones (the level is not honoured)."""
    return p.detach().to(device or p.device) != 0


def checkerboard(p: torch.Tensor, sparsity: torch.Tensor, score_shaper=None, device: Optional[torch.device] = None):
    """The kept entries spread evenly along the last dimension, each row rolled by the period."""
    density = 1.0 - float(sparsity)
    if density <= 0:
        return torch.zeros_like(p, dtype=torch.bool)
    columns = p.shape[-1]
    padding = int(math.ceil(columns / density + 1e-5))
    steps = torch.floor(torch.arange(columns + padding) * density + 1e-5)
    row = steps[1:] != steps[:-1]
    if p.dim() == 2:
        offset = -int(math.floor(1 / density - 1e-5))
        row = torch.stack([torch.roll(row, i * offset) for i in range(p.shape[0])])
    return row[..., :columns].clone().expand(p.shape).clone()


METHODS = {"random": random, "topk": topk, "from_zeros": from_zeros, "checkerboard": checkerboard}


def make_init_method(init_method: InitMethodType) -> InitMethodCallable:
    """`init_method` as a function: one of METHODS by name, or a callable taken as it is."""
    if callable(init_method):
        return init_method
    if isinstance(init_method, str) and init_method in METHODS:
        return METHODS[init_method]
    raise InvalidArgument(f"Unknown sparsity init_method {init_method!r}. Valid methods: {', '.join(METHODS)}, or a "
                          "function (p, sparsity, score_shaper=None, device=None) returning a bool mask.")
