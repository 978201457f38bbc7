"""`cstorch.nn.functional`: the real module's functions ModelZoo 2.10 calls (its mixture-of-experts
router and the Eleuther harness): `one_hot`.

The real module's CSX-only kernels (sparse and ranged matmuls, scope boundaries, mesh transfers)
are the system's own operations, not built here."""

import torch

from csadmin.errors import InvalidArgument


def one_hot(array: torch.Tensor, num_classes: int) -> torch.Tensor:
    """`array`'s classes as one-hot int32 vectors along a new last dimension of `num_classes`
    (the real function: a scatter into zeros, so it traces as static shapes; torch's one_hot
    gives int64 and may infer the class count, this one needs it)."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise InvalidArgument(f"one_hot: num_classes must be a whole number ≥ 1 (it cannot be inferred in a "
                              f"compiled step); got {num_classes!r}.")
    zeros = torch.zeros(array.shape + (num_classes,), device=array.device, dtype=torch.int)
    return zeros.scatter_(-1, array.unsqueeze(-1), 1)
