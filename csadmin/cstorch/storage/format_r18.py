"""R1.8's checkpoint file (format version 0.2), and the 2.0-era files (0.3, 0.4) when reading, as
the real package's legacy reader (cerebras/pytorch/storage/_legacy) reads them.

Root attributes: `__version__` (0.2 for R1.8; absent means 0.1) and `__spec__`, the hex of a dill
pickle of the state dict's torch pytree TreeSpec (read here by pickles.py, which resolves only
the spec's own names and runs no code). Every value is a dataset at the root named by its dotted
key, percent-quoted (`urllib.parse.quote(key, safe="")`, so a "/" in a key stays one name).
R1.8's datasets (no `__H5_TYPE__`): a tensor is its array (bfloat16 as int16 with `is_bfloat16`);
a number a 0-d dataset with `is_scalar`; a string an empty one with `is_string` and `string_val`;
None one with `is_none`; a constant tensor `is_constructible` with `shape` and `fill_value`.
The 2.0-era files tag each dataset with `__H5_TYPE__` (TorchTensorH5Type, NumpyArrayH5Type,
ScalarH5Type, StringH5Type, NoneH5Type, …), which this reader also takes. A value the spec
names but the file lacks reads as None, as the real reader's does.
"""

from __future__ import annotations

import collections
import copyreg
import io
import pickle
from urllib.parse import quote

import h5py
import numpy as np
import torch

from . import pickles, tensors, tree

VERSION = 0.2
_TYPES = {dict: tree.DICT, collections.OrderedDict: tree.ODICT, list: tree.LIST, tuple: tree.TUPLE,
          set: tree.SET}


class Unsupported(ValueError):
    """A value R1.8's format cannot hold (on save), naming where it is."""


def write(f: h5py.File, state_dict) -> None:
    """Write `state_dict` into the empty, open file `f` as R1.8 did."""
    leaves, spec = tree.flatten(state_dict)
    if spec.type is None:
        raise Unsupported("Cannot save the state dict: it is a single value; cstorch.save takes a dict.")
    f.attrs["__spec__"] = _pickle_spec(spec).hex()
    f.attrs["__version__"] = VERSION
    for key, value, where in zip(tree.dotted_keys(spec), leaves, tree.paths(spec)):
        name = quote(key, safe="")
        if name in f:
            raise Unsupported(f"Cannot save {where}: its key {key!r} is also another value's.")
        _write_value(f, name, value, where)


def _write_value(f: h5py.File, name: str, value, where: str) -> None:
    kind = type(value)
    if isinstance(value, torch.Tensor):
        try:
            array = tensors.to_array(value, where)
        except tensors.TensorError as e:
            raise Unsupported(str(e)) from None
        dataset = f.create_dataset(name, data=array)
        dataset.attrs["crc32"] = np.uint32(tensors.crc32(array))
        if value.dtype == torch.bfloat16:
            dataset.attrs["is_bfloat16"] = True
        elif value.dtype not in tensors.RTFX:
            raise Unsupported(f"Cannot save {where}: a {value.dtype} tensor, which R1.8's checkpoint format "
                              "cannot name.")
    elif kind in (bool, int, float):
        if kind is int and not -(2**63) <= value < 2**63:
            raise Unsupported(f"Cannot save {where}: {value} does not fit R1.8's 64-bit integers.")
        f.create_dataset(name, data=np.asarray(value)).attrs["is_scalar"] = True
    elif kind is str:
        dataset = f.create_dataset(name, data=h5py.Empty("f"))
        dataset.attrs.update({"is_string": True, "string_val": value})
    elif value is None:
        f.create_dataset(name, data=h5py.Empty("f")).attrs["is_none"] = True
    else:
        raise Unsupported(f"Cannot save {where}: a {kind.__module__}.{kind.__qualname__}. R1.8's checkpoint "
                          "holds tensors, int, float, bool, None, str, and dicts, lists and tuples of them.")


def _pickle_spec(spec: tree.Spec) -> bytes:
    """A pickle of torch pytree TreeSpec/LeafSpec objects (what dill wrote for R1.8), made from
    their fields so it does not depend on this process's torch release."""
    buffer = io.BytesIO()
    _SpecPickler(buffer, protocol=4).dump(_pickled(spec))
    return buffer.getvalue()


class _Pickled:
    """Stands for a TreeSpec/LeafSpec in the pickle: pickled as an object of that class (the
    pickler asks `__class__`) with these fields as its state."""

    def __init__(self, cls, state: dict):
        self._cls, self.state = cls, state

    @property
    def __class__(self):
        return self._cls


def _pickled(spec: tree.Spec) -> _Pickled:
    from torch.utils import _pytree

    if spec.type is None:
        return _Pickled(_pytree.LeafSpec, {"type": None, "context": None, "children_specs": [], "num_nodes": 1,
                                           "num_leaves": 1, "num_children": 0})
    children = [_pickled(child) for child in spec.children]
    return _Pickled(_pytree.TreeSpec, {
        "type": {name: made for made, name in _TYPES.items()}[spec.type], "context": spec.context,
        "children_specs": children, "num_nodes": 1 + sum(child.state["num_nodes"] for child in children),
        "num_leaves": spec.num_leaves, "num_children": len(children)})


class _SpecPickler(pickle.Pickler):
    def reducer_override(self, obj):
        if type(obj) is _Pickled:
            return copyreg.__newobj__, (obj.__class__,), obj.state
        return NotImplemented


# -- reading ---------------------------------------------------------------------------------------


def read(f: h5py.File, path: str, device):
    """The state dict in the open file `f` (a version < 0.5 file with a pickled spec)."""
    spec = _spec(f)
    leaves = []
    for key in tree.dotted_keys(spec):
        name = quote(key, safe="")
        try:
            leaves.append(_read_value(f, name, device) if name in f else None)
        except (OSError, KeyError, IndexError, TypeError, ValueError, AttributeError, RuntimeError,
                pickle.UnpicklingError, EOFError) as e:
            raise ValueError(f"its entry {key!r} is damaged ({e})") from None
    return tree.unflatten(spec, leaves)


def _spec(f: h5py.File) -> tree.Spec:
    try:
        pickled = pickles.loads(bytes.fromhex(tensors.text(f.attrs["__spec__"])), pickles.SPEC_NAMES)
        return _converted(pickled, 0)
    except (KeyError, TypeError, ValueError, AttributeError, pickle.UnpicklingError, EOFError) as e:
        raise ValueError(f"its __spec__ is not a state dict's structure ({e})") from None


def _converted(node, depth: int) -> tree.Spec:
    if depth > tree.MAX_DEPTH:
        raise ValueError(f"entries nested more than {tree.MAX_DEPTH} levels deep, which no state dict is")
    if not isinstance(node, pickles.PickledSpec):
        raise TypeError(f"a spec node is a {type(node).__name__}")
    if node.is_leaf or node.type is None:
        return tree.LEAF
    name = _TYPES.get(node.type)
    if name is None:
        raise ValueError(f"the structure holds a {node.type!r}, which is not a dict, list, tuple or set")
    children = tuple(_converted(child, depth + 1) for child in node.children_specs)
    if name in (tree.DICT, tree.ODICT):
        if len(node.context) != len(children):
            raise ValueError("a dict's keys do not match its entries")
        return tree.Spec(name, list(node.context), children)
    return tree.Spec(name, None, children)


def _read_value(f: h5py.File, name: str, device):
    dataset = f[name]
    attrs = dataset.attrs
    kind = attrs.get("__H5_TYPE__")
    kind = tensors.text(kind) if kind is not None else None
    if kind in ("NoneH5Type",) or attrs.get("is_none", False):
        return None
    if kind == "StringH5Type":
        return tensors.text(attrs["string_value"])
    if attrs.get("is_string", False):
        return tensors.text(attrs["string_val"])
    if kind == "ScalarH5Type" or attrs.get("is_scalar", False):
        return dataset[()].item()
    if kind in ("FullTensorH5Type", "DeferredFullTensor") or attrs.get("is_constructible", False):
        dtype = torch.bfloat16 if attrs.get("is_bfloat16") else torch.from_numpy(np.empty(0, dataset.dtype)).dtype
        tensor = torch.full(tuple(int(n) for n in attrs["shape"]), np.asarray(attrs["fill_value"]).item(),
                            dtype=dtype)
        return tensor if device is None else tensor.to(device)
    if kind == "ObjectH5Type":
        return pickles.loads(bytes.fromhex(tensors.text(attrs["object_value"])), pickles.VALUE_NAMES)
    if "filepath" in attrs:
        raise ValueError("it refers to another file, which this reader does not follow")
    if kind not in (None, "TorchTensorH5Type", "NumpyArrayH5Type"):
        raise ValueError(f"it is a {kind}, which this reader does not take")
    array = tensors.read_checked(dataset, attrs)
    natural = torch.from_numpy(np.empty(0, array.dtype)).dtype
    tensor = tensors.from_array(array, torch.bfloat16 if attrs.get("is_bfloat16") else natural)
    return tensor if device is None else tensor.to(device)
