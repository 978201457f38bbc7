"""Reading this project's earlier checkpoint files (root attributes `format = "csadmin.cstorch
checkpoint"`, `version = 1`), which cstorch.save wrote before it wrote the real package's format.

Layout: the value is the group `state_dict`; every node has an attribute `kind`: `dict`/`odict`/
`list`/`tuple`/`size` groups with children "0", "1", … in order (a dict's keys in its JSON
attribute `keys`, a sequence's length in `length`); `tensor` datasets with the attributes `dtype`
(torch's name without "torch.") and `crc32`; scalar datasets `int`/`bigint`/`float`/`bool`/`none`/
`str`/`bytes`. Read only: nothing writes this layout any more.
"""

from __future__ import annotations

import collections
import json

import numpy as np
import torch

from . import tensors, tree

FORMAT = "csadmin.cstorch checkpoint"
VERSION = 1
ROOT = "state_dict"


def is_one(f) -> bool:
    return f.attrs.get("format") == FORMAT


def read(f, device):
    """The state dict in the open file `f`; ValueError naming the entry where it is damaged."""
    version = int(f.attrs.get("version", 0))
    if version != VERSION or ROOT not in f:
        raise ValueError(f"it is this project's format version {version}; this cstorch reads version {VERSION}")
    return _read(f[ROOT], ROOT, device)


def _read(node, where: str, device, depth: int = 0):
    if depth > tree.MAX_DEPTH:
        raise ValueError(f"entries nested more than {tree.MAX_DEPTH} levels deep, which no state dict is")
    try:
        kind = tensors.text(node.attrs.get("kind"))
        if kind in ("dict", "odict"):
            keys = json.loads(tensors.text(node.attrs["keys"]))
            if not isinstance(keys, list) or len(keys) != len(node):
                raise ValueError("its keys do not match its entries")
            made = collections.OrderedDict() if kind == "odict" else {}
            for i, key in enumerate(keys):
                made[key] = _read(node[str(i)], f"{where}[{key!r}]", device, depth + 1)
            return made
        if kind in ("list", "tuple", "size"):
            length = int(node.attrs["length"])
            if length != len(node):
                raise ValueError(f"{length} items recorded, {len(node)} present")
            items = [_read(node[str(i)], f"{where}[{i}]", device, depth + 1) for i in range(length)]
            return {"list": list, "tuple": tuple, "size": torch.Size}[kind](items)
        if kind == "tensor":
            return _read_tensor(node, device)
        return _read_scalar(node, kind)
    except _Nested:
        raise
    except (OSError, KeyError, ValueError, TypeError, AttributeError, RuntimeError) as e:
        raise _Nested(f"{where} is damaged ({e})") from None


class _Nested(ValueError):
    """Raised once at the entry that is damaged, then passed up unchanged."""


def _read_tensor(dataset, device) -> torch.Tensor:
    dtype = tensors.parse_dtype(dataset.attrs["dtype"])
    array = tensors.read_dataset(dataset)
    if tensors.crc32(array) != int(dataset.attrs["crc32"]):
        raise ValueError("its CRC-32 does not match its bytes")
    tensor = tensors.from_array(array, dtype)
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
        return int(tensors.text(data))
    if kind == "float":
        return float(data)
    if kind == "str":
        return tensors.text(data)
    if kind == "bytes":
        return np.asarray(data, dtype=np.uint8).tobytes()
    raise ValueError(f"unknown kind {kind!r}")
