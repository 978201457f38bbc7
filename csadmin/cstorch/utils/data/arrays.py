"""`cstorch.from_numpy` and `cstorch.to_numpy`: tensors to numpy arrays and back, bfloat16 included.

    array = cstorch.to_numpy(tensor)          # tensor.numpy(), sharing its memory
    tensor = cstorch.from_numpy(array)        # torch.from_numpy(array); a read-only array is copied

numpy has no bfloat16, so a bfloat16 tensor becomes an array of its 16-bit patterns whose dtype
is marked as bfloat16 (`BF16`: int16 with the Cerebras metadata the real package puts on it), and
`from_numpy` turns such an array back into a bfloat16 tensor, bit for bit. The marking is the
dtype's metadata, which slices and copies keep and some numpy operations drop (astype,
concatenate, a view as int16): `is_bf16(array)` says whether it is still there.
Anything else is torch's own conversion, with torch's refusals (a tensor that requires grad, one
on a GPU, an object array).
"""

from __future__ import annotations

import numpy as np
import torch

from csadmin.errors import InvalidArgument

BF16 = np.dtype("i2", metadata={"is_bfloat16": True, "is_cerebras": True})


def is_bf16(dtype_or_array) -> bool:
    """Whether an array (or a dtype) holds bfloat16 bit patterns, marked as BF16."""
    dtype = dtype_or_array.dtype if isinstance(dtype_or_array, np.ndarray) else dtype_or_array
    return (isinstance(dtype, np.dtype) and dtype in (np.int16, np.uint16) and dtype.metadata is not None
            and all(dtype.metadata.get(k) == v for k, v in BF16.metadata.items()))


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    """`tensor` as a numpy array sharing its memory; a bfloat16 one as BF16 bit patterns."""
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"to_numpy expects a torch.Tensor, got {type(tensor).__name__}.",
                              hint="Pass a CPU tensor (tensor.detach().cpu() for one that requires grad or lives on "
                                   "a GPU).")
    if tensor.dtype == torch.bfloat16:
        return tensor.view(torch.int16).numpy().view(BF16)
    return tensor.numpy()


def from_numpy(array: np.ndarray) -> torch.Tensor:
    """`array` as a tensor: sharing its memory when it is writeable (torch needs that), a copy's
    otherwise; a BF16 array as a bfloat16 tensor."""
    if not isinstance(array, np.ndarray):
        raise InvalidArgument(f"from_numpy expects a numpy array, got {type(array).__name__}.",
                              hint="Convert it first (numpy.asarray(value)).")
    if not array.flags.writeable:
        array = array.copy()
    if is_bf16(array):
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
