"""The few pickles the real package's checkpoints hold, read without running code from the file.

Two kinds: R1.8's `__spec__` (dill's pickle of a torch pytree TreeSpec, hex-encoded) and a value
the 2.x package wrote with its fallback `ObjectSerializer` (a dill pickle of a bytes object or a
torch.Size, say). Both are read by an unpickler that resolves only the names listed here; any
other name (a function, a class of the writer's program) is refused, so no code in a file runs.
TreeSpec and LeafSpec load as `PickledSpec`, a plain record of their fields.
"""

from __future__ import annotations

import collections
import io
import pickle

import torch


class PickledSpec:
    """A TreeSpec/LeafSpec as pickled: `type` (dict, list, … or None for a leaf), `context` (a
    dict's keys), `children_specs`. Its fields are set by the pickle's state, nothing else."""

    is_leaf = False

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (dict state, slots state)
            state = {**(state[0] or {}), **(state[1] or {})}
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("a pickled tree spec's state is not a mapping")
        self.__dict__.update(state)


class PickledLeafSpec(PickledSpec):
    is_leaf = True


def _load_type(name: str):
    """dill's `_load_type(name)` for the builtin types a spec names."""
    found = {"dict": dict, "list": list, "tuple": tuple, "set": set, "NoneType": type(None)}.get(name)
    if found is None:
        raise pickle.UnpicklingError(f"the pickle names the type {name!r}, which a state dict's structure is not")
    return found


SPEC_NAMES = {
    ("torch.utils._pytree", "TreeSpec"): PickledSpec,
    ("torch.utils._pytree", "LeafSpec"): PickledLeafSpec,
    ("dill._dill", "_load_type"): _load_type,
    ("builtins", "dict"): dict, ("builtins", "list"): list, ("builtins", "tuple"): tuple,
    ("builtins", "set"): set, ("collections", "OrderedDict"): collections.OrderedDict,
    ("__builtin__", "dict"): dict, ("__builtin__", "list"): list, ("__builtin__", "tuple"): tuple,
    # R1.8's own dict subclass; the real package's legacy reader reads it as a dict too
    ("cerebras_pytorch.utils.tensor_scalar_dict", "TensorScalarDict"): dict,
    ("copyreg", "__newobj__"): lambda cls, *args: cls.__new__(cls, *args),
}

VALUE_NAMES = {
    ("torch", "Size"): torch.Size,
    ("builtins", "bytes"): bytes, ("builtins", "bytearray"): bytearray,
    ("_codecs", "encode"): lambda text, encoding="latin1": text.encode(encoding),
    ("collections", "OrderedDict"): collections.OrderedDict,
}


class _Restricted(pickle.Unpickler):
    def __init__(self, data: bytes, names: dict):
        super().__init__(io.BytesIO(data))
        self._names = names

    def find_class(self, module, name):
        found = self._names.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"the pickle names {module}.{name}; loading it would run code from the "
                                         "file, which cstorch.load never does")
        return found


def loads(data: bytes, names: dict):
    """The value pickled in `data`, resolving only `names` ((module, name) -> object).
    pickle.UnpicklingError (or ValueError, EOFError) for anything else or a damaged pickle."""
    return _Restricted(bytes(data), names).load()
