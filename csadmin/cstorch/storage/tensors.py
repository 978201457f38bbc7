"""Tensors as HDF5 datasets hold them: a torch tensor to the numpy array written, and back.

Dtypes numpy has no type for are stored as the integer of the same width, bit for bit: bfloat16
as int16 (as the real package's `cstorch.to_numpy` gives it), the float8 formats as uint8. The
name torch gives the dtype ("torch.bfloat16") travels beside the data and says how to view it.
Every tensor also carries the CRC-32 of its bytes, so a damaged byte is found on load
(`read_checked`). Beside them, `text`: an attribute or scalar dataset that names a dtype, a kind
or a spec, as h5py hands it back (str, or bytes for a fixed-length string).
"""

from __future__ import annotations

import zlib

import numpy as np
import torch

_NUMPY_DTYPES = {
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
    torch.uint64, torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
}
_SAME_WIDTH_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
# The appliance's RtFx dtype numbers the real package records beside each tensor (`rtfx_dtypes`);
# dtypes it has no number for (int8, complex, float8) are recorded without one.
RTFX = {torch.bool: 1, torch.int16: 3, torch.int32: 4, torch.int64: 5, torch.uint8: 6, torch.float16: 10,
        torch.float32: 11, torch.float64: 12, torch.bfloat16: 15}


class TensorError(ValueError):
    """A tensor that cannot be written, or data that does not read as the tensor it claims."""


def to_array(value: torch.Tensor, where: str) -> np.ndarray:
    """The contiguous CPU array to write for `value` (its grad and sharing are not kept)."""
    if value.layout != torch.strided or value.is_quantized:
        raise TensorError(f"Cannot save {where}: a {value.layout} tensor; a checkpoint holds dense tensors.")
    tensor = value.detach().cpu().resolve_conj().resolve_neg().contiguous()
    if tensor.dtype not in _NUMPY_DTYPES:
        tensor = tensor.view(_SAME_WIDTH_INT[tensor.element_size()])
    return tensor.numpy()


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype)  # "torch.float32": the real package's spelling


def parse_dtype(name) -> torch.dtype:
    """torch.float32 from "torch.float32" (or "float32", the old layout's spelling)."""
    if isinstance(name, bytes):
        name = name.decode("utf-8")
    found = getattr(torch, str(name).removeprefix("torch."), None)
    if not isinstance(found, torch.dtype):
        raise TensorError(f"unknown dtype {name!r}")
    return found


def from_array(array: np.ndarray, dtype: torch.dtype, shape=None) -> torch.Tensor:
    """The tensor `array` holds, viewed as `dtype` (same width) and checked against `shape`."""
    array = np.asarray(array)
    if not array.flags.c_contiguous:  # (not np.ascontiguousarray: it makes a 0-d array 1-d)
        array = array.copy(order="C")
    if array.dtype == np.object_ or array.dtype.kind not in "biufc":
        raise TensorError(f"the data is {array.dtype}, not numbers")
    tensor = torch.from_numpy(array)
    if tensor.dtype != dtype:
        if tensor.element_size() != torch.empty((), dtype=dtype).element_size():
            raise TensorError(f"the data is {array.dtype}, which does not hold {dtype}")
        tensor = tensor.view(dtype)
    if shape is not None and tuple(tensor.shape) != tuple(int(n) for n in shape):
        raise TensorError(f"the data's shape {tuple(tensor.shape)} is not the recorded {tuple(shape)}")
    return tensor


def crc32(array: np.ndarray) -> int:
    """CRC-32 of the array's bytes (zlib's, several GB/s; HDF5's own Fletcher-32 filter runs at
    about a tenth of that and needs chunked storage)."""
    return zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B")) if array.size else 0


def read_checked(dataset, attrs) -> np.ndarray:
    """`dataset`'s array, checked against the `crc32` in `attrs` where it has one (a ValueError
    when it does not match: the loaders say which entry is damaged)."""
    array = read_dataset(dataset)
    if "crc32" in attrs and crc32(array) != int(attrs["crc32"]):
        raise ValueError("its CRC-32 does not match its bytes")
    return array


def text(value) -> str:
    """An attribute's text: str as it is, bytes decoded as UTF-8; anything else a TypeError."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise TypeError(f"expected text, found {type(value).__name__}")
    return value


def read_dataset(dataset) -> np.ndarray:
    """A dataset's whole array (straight into the array's memory for a non-empty one)."""
    if dataset.shape and dataset.size:
        array = np.empty(dataset.shape, dtype=dataset.dtype)
        dataset.read_direct(array)
        return array
    return np.array(dataset[()], copy=True)
