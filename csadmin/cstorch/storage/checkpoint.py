"""cstorch.save / cstorch.load: checkpoints in an HDF5 file (h5py), used like torch.save/torch.load.

    cstorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.mdl")
    state_dict = cstorch.load("ckpt.mdl")                 # map_location="cpu" likewise
    torch.save(cstorch.load("ckpt.mdl", map_location="cpu"), "ckpt.pt")   # a plain PyTorch one

What round-trips exactly, values and types: nested dicts (OrderedDict stays one), lists, tuples
and torch.Size of tensors (every dtype, bfloat16 and float8 included, any shape, 0-d and empty),
ints (any size), floats (nan, inf and -0.0 too), bools, None, str and bytes; a dict's keys may be
any of the scalar types (an optimizer's state is keyed by int). Anything else is refused before
the file is touched, naming where it is. A tensor comes back as a plain CPU tensor (a Parameter
as a tensor, like torch.load of a state dict), contiguous, its grad and sharing not kept.

The file is written atomically: to a temporary file beside it, fsync'd, then renamed over `path`
(and the directory fsync'd), so a crash leaves the old checkpoint or the new one, never half of
one. Every tensor carries the CRC-32 of its bytes (attr `crc32`), so a damaged byte is found on
load. A file load cannot read as one of ours is a `BadCheckpoint` naming it.

Loading runs no code from the file (unlike a pickle): it holds only HDF5 groups, datasets, and
JSON for dict keys.

Layout: the root's attrs `format`/`version`; each value is a node whose attr `kind` says what it
is: a group for dict/odict/list/tuple/size (children named "0", "1", … in order; a dict's keys in
its JSON attr `keys`), a dataset for a tensor (attr `dtype`, the torch dtype's name) or a scalar.
"""

from __future__ import annotations

import collections
import json
import os
import zlib

import h5py
import numpy as np
import torch

from csadmin.errors import BadCheckpoint, InvalidArgument, NotFound
from csadmin.shared.atomic_write import Replacing

FORMAT = "csadmin.cstorch checkpoint"
VERSION = 1
_ROOT = "state_dict"

# torch dtypes numpy has no type for are stored as the integer of the same width (bit for bit).
_SAME_WIDTH_INT = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
_NUMPY_DTYPES = {
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
}
_INT64 = (-(2**63), 2**63 - 1)
_KEY_TYPES = (str, int, float, bool, type(None))
MAX_DEPTH = 100  # containers within containers; a state dict has a handful, a loop has no end


def save(state_dict, path) -> None:
    """Write `state_dict` (see the module docstring for what it may hold) to `path` atomically."""
    path = _path(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise NotFound(f"Cannot save the checkpoint {path}: no directory {directory}.",
                       hint="Create the directory first (os.makedirs).")
    with Replacing(path) as temporary, h5py.File(temporary, "w-") as f:
        f.attrs["format"] = FORMAT
        f.attrs["version"] = VERSION
        _write(f, _ROOT, state_dict, _ROOT)


def load(path, map_location=None):
    """Read a checkpoint `save` wrote. `map_location` (None, "cpu", a torch.device or its name)
    is where its tensors go; None leaves them on the CPU."""
    path = _path(path)
    device = _device(map_location)
    if not os.path.exists(path):
        raise NotFound(f"No checkpoint file {path}.", hint="Check the path (cstorch.save writes it).")
    if os.path.isdir(path):
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: it is a directory.")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: not an HDF5 file, or truncated ({e}).") from None
    with f:
        if f.attrs.get("format") != FORMAT or _ROOT not in f:
            raise BadCheckpoint(f"Cannot load the checkpoint {path}: an HDF5 file, but not a cstorch "
                                f"checkpoint (no '{FORMAT}' format attribute).")
        version = int(f.attrs.get("version", 0))
        if version != VERSION:
            raise BadCheckpoint(f"Cannot load the checkpoint {path}: format version {version}; this "
                                f"cstorch reads version {VERSION}.", hint="Load it with the cstorch that wrote it.")
        return _read(f[_ROOT], _ROOT, path, device)


# -- writing ---------------------------------------------------------------------------------------


def _write(parent, name: str, value, where: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise InvalidArgument(f"Cannot save a state dict nested more than {MAX_DEPTH} levels deep (or one that "
                              "contains itself).")
    kind = type(value)
    if isinstance(value, torch.Tensor):
        _write_tensor(parent, name, value, where)
    elif kind in (dict, collections.OrderedDict):
        keys = list(value)
        for key in keys:
            if type(key) not in _KEY_TYPES:
                raise InvalidArgument(f"Cannot save {where}: its key {key!r} is a {type(key).__name__}; "
                                      "a checkpoint's dict keys are str, int, float, bool or None.")
        group = parent.create_group(name)
        group.attrs["kind"] = "odict" if kind is collections.OrderedDict else "dict"
        group.attrs["keys"] = json.dumps(keys)
        for i, key in enumerate(keys):
            _write(group, str(i), value[key], f"{where}[{key!r}]", depth + 1)
    elif kind in (list, tuple, torch.Size):
        group = parent.create_group(name)
        group.attrs["kind"] = {list: "list", tuple: "tuple", torch.Size: "size"}[kind]
        group.attrs["length"] = len(value)
        for i, item in enumerate(value):
            _write(group, str(i), item, f"{where}[{i}]", depth + 1)
    else:
        _write_scalar(parent, name, value, where)


def _write_tensor(parent, name: str, value: torch.Tensor, where: str) -> None:
    if value.layout != torch.strided or value.is_quantized:
        raise InvalidArgument(f"Cannot save {where}: a {value.layout} tensor; a checkpoint holds dense tensors.",
                              hint="Convert it first (e.g. .to_dense() or .dequantize()).")
    tensor = value.detach().cpu().resolve_conj().resolve_neg().contiguous()
    if tensor.dtype not in _NUMPY_DTYPES:
        tensor = tensor.view(_SAME_WIDTH_INT[tensor.element_size()])
    array = tensor.numpy()
    dataset = parent.create_dataset(name, data=array)
    dataset.attrs["kind"] = "tensor"
    dataset.attrs["dtype"] = str(value.dtype).removeprefix("torch.")
    dataset.attrs["crc32"] = np.uint32(_crc32(array))


def _crc32(array: np.ndarray) -> int:
    """CRC-32 of the tensor's bytes (zlib's, several GB/s; HDF5's own Fletcher-32 filter runs at
    about a tenth of that and needs chunked storage)."""
    return zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B")) if array.size else 0


def _write_scalar(parent, name: str, value, where: str) -> None:
    kind = type(value)
    if kind is bool:
        data, tag = np.uint8(value), "bool"
    elif kind is int:
        data, tag = (np.int64(value), "int") if _INT64[0] <= value <= _INT64[1] else (str(value), "bigint")
    elif kind is float:
        data, tag = np.float64(value), "float"
    elif value is None:
        data, tag = h5py.Empty("f"), "none"
    elif kind is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidArgument(f"Cannot save {where}: the string is not valid UTF-8.") from None
        data, tag = value, "str"
    elif kind is bytes:
        data, tag = np.frombuffer(value, dtype=np.uint8), "bytes"
    else:
        raise InvalidArgument(
            f"Cannot save {where}: a {kind.__module__}.{kind.__qualname__}. A checkpoint holds tensors, "
            "int, float, bool, None, str, bytes, and dicts, lists and tuples of them.",
            hint="Convert it to one of those (e.g. a numpy value with .item(), an array with torch.from_numpy).")
    dataset = parent.create_dataset(name, data=data)
    dataset.attrs["kind"] = tag


# -- reading ---------------------------------------------------------------------------------------


def _read(node, where: str, path: str, device, depth: int = 0):
    if depth > MAX_DEPTH:
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: entries nested more than {MAX_DEPTH} levels "
                            "deep, which no state dict is.")
    try:
        kind = _text(node.attrs.get("kind"))
        if kind in ("dict", "odict"):
            keys = json.loads(_text(node.attrs["keys"]))
            made = collections.OrderedDict() if kind == "odict" else {}
            if not isinstance(keys, list) or len(keys) != len(node):
                raise ValueError("its keys do not match its entries")
            for i, key in enumerate(keys):
                made[key] = _read(node[str(i)], f"{where}[{key!r}]", path, device, depth + 1)
            return made
        if kind in ("list", "tuple", "size"):
            length = int(node.attrs["length"])
            if length != len(node):
                raise ValueError(f"{length} items recorded, {len(node)} present")
            items = [_read(node[str(i)], f"{where}[{i}]", path, device, depth + 1) for i in range(length)]
            return {"list": list, "tuple": tuple, "size": torch.Size}[kind](items)
        if kind == "tensor":
            return _read_tensor(node, device)
        return _read_scalar(node, kind)
    except BadCheckpoint:
        raise
    except (OSError, KeyError, ValueError, TypeError, AttributeError, RuntimeError) as e:
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: {where} is damaged ({e}).") from None


def _read_tensor(dataset, device) -> torch.Tensor:
    dtype = getattr(torch, _text(dataset.attrs["dtype"]), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {dataset.attrs['dtype']!r}")
    if dataset.shape and dataset.size:  # straight into the tensor's memory: no copy
        array = np.empty(dataset.shape, dtype=dataset.dtype)
        dataset.read_direct(array)
    else:
        array = np.array(dataset[()], copy=True)
    if _crc32(array) != int(dataset.attrs["crc32"]):
        raise ValueError("its CRC-32 does not match its bytes")
    tensor = torch.from_numpy(array)
    if tensor.dtype != dtype:
        tensor = tensor.view(dtype)
    return tensor if device is None else tensor.to(device)


def _read_scalar(dataset, kind: str):
    if kind == "none":
        return None
    data = dataset[()]
    if kind == "bool":
        return bool(data)
    if kind == "int":
        return int(data)
    if kind == "bigint":
        return int(_text(data))
    if kind == "float":
        return float(data)
    if kind == "str":
        return _text(data)
    if kind == "bytes":
        return np.asarray(data, dtype=np.uint8).tobytes()
    raise ValueError(f"unknown kind {kind!r}")


def _text(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if not isinstance(value, str):
        raise ValueError(f"expected text, found {type(value).__name__}")
    return value


def _path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"A checkpoint path is a str or os.PathLike, not {type(path).__name__}.")
    return os.fspath(path)


def _device(map_location):
    if map_location is None:
        return None
    if isinstance(map_location, (str, torch.device)):
        try:
            return torch.device(map_location)
        except (RuntimeError, ValueError):
            pass
    raise InvalidArgument(f"map_location {map_location!r} is not a device.",
                          hint='Pass None, "cpu" or a torch.device.')
