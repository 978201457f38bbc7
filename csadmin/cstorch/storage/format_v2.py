"""The real package's 2.x checkpoint file (format version 0.5, cerebras-pytorch 2.x's `cstorch.save`).

Root attributes: `__version__` 0.5, `__cstorch_version__`, `__spec__` (JSON: the structure with
"*" for every value, and torch's pytree tree spec of the state dict), and for every value its
dotted key's `<key>.__metadata__` (JSON: the value's own one-entry spec, `__objects__`, and
`<key>.__metadata__`: its serializer's `__TYPE__` and what it needs); `__SUCCESS__` last, so a
file cut short is known. A tensor is also a dataset named by its key (`optimizer.state.0.exp_avg`)
holding its array, LZ4-compressed (HDF5 filter 32004, from `hdf5plugin`) unless 0-d, with the same
metadata as attributes and, ours only, its `crc32` (the real reader ignores attributes it does not
use). Numbers, strings and None live in the metadata alone; a bytes or torch.Size value is a pickle
in the dataset's `__BYTES__` attribute (read back by pickles.py, which runs no code); a tensor
saved twice (tied weights) is written once and linked (`LinkedObject`).

Values are read eagerly (the real package hands back lazy tensors that read on first use).
"""

from __future__ import annotations

import json
import pickle

import h5py
import numpy as np
import torch

from . import constants, pickles, tensors, tree

VERSION = constants.CURRENT_CKPT_FORMAT_VERSION
_META = ".__metadata__"


class Unsupported(ValueError):
    """A value this format cannot hold (on save), naming where it is."""


def write(f: h5py.File, state_dict, cstorch_version: str) -> None:
    """Write `state_dict` into the empty, open file `f`."""
    leaves, spec = tree.flatten(state_dict)
    if spec.type is None:
        raise Unsupported("Cannot save the state dict: it is a single value; cstorch.save takes a dict "
                          "(or a list or tuple) of values.")
    keys, wheres = tree.dotted_keys(spec), tree.paths(spec)
    _check_unique(keys, wheres)
    lz4 = _lz4()
    f.attrs[constants.__SPEC__] = json.dumps([tree.sketch(spec), tree.dumps(spec)], indent=4)
    f.attrs[constants.__VERSION__] = VERSION
    f.attrs[constants.__CSTORCH_VERSION__] = cstorch_version
    first_key: dict[int, str] = {}  # a tensor's id -> the key it was written under
    for key, value, where in zip(keys, leaves, wheres):
        if isinstance(value, torch.Tensor) and id(value) in first_key:
            meta = {"key": first_key[id(value)], "__LINKED__": True, "__TYPE__": "LinkedObject", "__NONE__": True}
        else:
            meta = _write_value(f, key, value, where, lz4)
            if isinstance(value, torch.Tensor):
                first_key[id(value)] = key
        one = tree.Spec(tree.DICT, [key], (tree.LEAF,))
        f.attrs[key + _META] = json.dumps({"__spec__": [{key: "*"}, tree.dumps(one)], "__objects__": [key],
                                           key + _META: meta}, indent=4)
    f.attrs["__SUCCESS__"] = True


def _check_unique(keys: list[str], wheres: list[str]) -> None:
    seen: dict[str, str] = {}
    for key, where in zip(keys, wheres):
        if key in seen:
            raise Unsupported(f"Cannot save {where}: its key {key!r} is also {seen[key]}'s (a checkpoint names "
                              "each value by its dict keys joined with '.').")
        seen[key] = where


_NO_PLUGIN = ("the hdf5plugin package (HDF5's LZ4 filter, which the real package's checkpoints use) is not "
              "installed: pip install hdf5plugin")


def _lz4():
    try:
        import hdf5plugin  # registers the filters with HDF5 as it is imported
    except ImportError:
        raise Unsupported(f"Cannot save a checkpoint: {_NO_PLUGIN}.") from None
    return hdf5plugin.LZ4()


def _plugin_loaded() -> bool:
    try:
        import hdf5plugin  # noqa: F401  (registers the filters with HDF5 as it is imported)
    except ImportError:
        return False
    return True


def _write_value(f: h5py.File, key: str, value, where: str, lz4) -> dict:
    kind = type(value)
    if isinstance(value, torch.Tensor):
        return _write_tensor(f, key, value, where, lz4)
    if kind in (bool, int, float):
        return {"scalar_value": value, "__TYPE__": "ScalarSerializer", "__NONE__": True}
    if kind is str:
        return {"string_value": value, "__TYPE__": "StringSerializer", "__NONE__": True}
    if value is None:
        return {"__TYPE__": "NoneSerializer", "__NONE__": True}
    if kind in (bytes, torch.Size):
        meta = {"__TYPE__": "ObjectSerializer", "__BYTES__": True, "compressed": False}
        dataset = f.create_dataset(key, data=h5py.Empty("f"), track_order=True)
        dataset.attrs.update(meta)
        dataset.attrs["__BYTES__"] = np.void(pickle.dumps(value if kind is bytes else torch.Size(value), protocol=4))
        return meta
    raise Unsupported(
        f"Cannot save {where}: a {kind.__module__}.{kind.__qualname__}. A checkpoint holds tensors, int, float, "
        "bool, None, str, bytes, torch.Size, and dicts, lists, tuples and sets of them.")


def _write_tensor(f: h5py.File, key: str, value: torch.Tensor, where: str, lz4) -> dict:
    try:
        array = tensors.to_array(value, where)
    except tensors.TensorError as e:
        raise Unsupported(str(e)) from None
    meta = {"__TORCH__": True, "shapes": [list(value.shape)], "dtypes": [tensors.dtype_name(value.dtype)]}
    if value.dtype in tensors.RTFX:
        meta["rtfx_dtypes"] = [tensors.RTFX[value.dtype]]
    meta.update({"__TYPE__": "TorchTensorSerializer", "__NUMPY__": True, "compressed": False})
    compress = lz4 if array.ndim and array.size else {}
    dataset = f.create_dataset(key, data=array, **compress)
    dataset.attrs.update(meta)
    dataset.attrs["crc32"] = np.uint32(tensors.crc32(array))
    return meta


# -- reading ---------------------------------------------------------------------------------------


class Damaged(ValueError):
    """A part of the file that does not read as the format says; the message names the entry."""


def read(f: h5py.File, device):
    """The state dict in the open file `f` (a version 0.5 file)."""
    if not f.attrs.get("__SUCCESS__", False):
        raise Damaged("it was only partly written (no __SUCCESS__ mark): the save that wrote it did not finish")
    try:
        spec = tree.loads(json.loads(tensors.text(f.attrs["__spec__"]))[1])
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise Damaged(f"its __spec__ is damaged ({e})") from None
    keys = tree.dotted_keys(spec)
    plugin = _plugin_loaded()
    values = {}
    for key in keys:
        try:
            values[key] = _read_entry(f, key, device)
        except OSError as e:
            raise Damaged(f"its entry {key!r} is damaged ({e})" if plugin else
                          f"its entry {key!r} cannot be read: {_NO_PLUGIN}") from None
        except (KeyError, IndexError, TypeError, ValueError, AttributeError, RuntimeError,
                pickle.UnpicklingError, EOFError) as e:
            raise Damaged(f"its entry {key!r} is damaged ({e})") from None
    for key, value in values.items():
        if isinstance(value, _Link):
            if value.key not in values or isinstance(values[value.key], _Link):
                raise Damaged(f"its entry {key!r} links to {value.key!r}, which holds no value")
            values[key] = values[value.key]
    return tree.unflatten(spec, [values[key] for key in keys])


class _Link(str):
    @property
    def key(self) -> str:
        return str(self)


def _read_entry(f: h5py.File, key: str, device):
    if key + _META not in f.attrs:
        raise KeyError("no metadata for it")
    recorded = json.loads(tensors.text(f.attrs[key + _META]))
    inner = tree.dotted_keys(tree.loads(recorded["__spec__"][1]))
    if len(inner) != 1:
        raise ValueError("it was written by a serializer of nested objects, which this reader does not take")
    meta = recorded[inner[0] + _META]
    kind = meta["__TYPE__"]
    if kind == "TorchTensorSerializer":
        return _read_tensor(f[inner[0]], meta, device)
    if kind == "ScalarSerializer":
        return meta["scalar_value"]
    if kind == "StringSerializer":
        return meta["string_value"]
    if kind == "NoneSerializer":
        return None
    if kind == "LinkedObject":
        return _Link(meta["key"])
    if kind == "ObjectSerializer":
        data = f[inner[0]].attrs["__BYTES__"]
        return pickles.loads(np.asarray(data).tobytes(), pickles.VALUE_NAMES)
    if kind in ("DeferredObject", "DeferredNumpyArray") or "path" in meta:
        raise ValueError("it refers to another file (an external link), which this reader does not follow")
    raise ValueError(f"it was written by the serializer {kind!r}, which this reader does not take")


def _read_tensor(dataset, meta: dict, device) -> torch.Tensor:
    if meta.get("__RTFX__"):
        raise ValueError("its data is an appliance RtFx buffer, which this reader does not take")
    dtype = tensors.parse_dtype(meta["dtypes"][0])
    array = tensors.read_checked(dataset, dataset.attrs)
    tensor = tensors.from_array(array, dtype, meta["shapes"][0])
    return tensor if device is None else tensor.to(device)
