"""`cstorch.lib.cerebras_pytorch_lib`: what ModelZoo 2.10 calls of the real package's native
library (its C extension, the lazy-tensor bridge to the compiler): `set_attribute`.

`set_attribute(tensor, name, value)` attaches a compiler attribute to a traced tensor (ModelZoo's
decoder layers mark their outputs `cs.internal = {"source_vars": [...]}` for numeric validation
against tensor dumps). It is a hint, and changes no value: here the attribute is kept on the
tensor, in `tensor.cs_attributes` (a dict, name → value), for a script or a test to read; its
value must be what the compiler's attributes hold (bool, int, float, str, or lists and dicts of
them), else it is refused. The library's other functions (the lazy tensors' IR, appliance data,
POL and annotations) are this runtime's own machinery and are not exposed under it.
"""

import numbers

import torch

from csadmin.errors import InvalidArgument


def _plain(value) -> bool:
    if isinstance(value, (bool, str)) or isinstance(value, numbers.Real):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def set_attribute(tensor: torch.Tensor, name: str, value) -> None:
    """Attach the compiler attribute `name` = `value` to `tensor` (see the module docstring)."""
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"set_attribute: expected a tensor, got {type(tensor).__name__}.")
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"set_attribute: the attribute's name is a non-empty string; got {name!r}.")
    if not _plain(value):
        raise InvalidArgument(f"set_attribute: {name!r} = {value!r}: an attribute holds a bool, int, float, str, or "
                              "lists and dicts (string keys) of them.")
    attributes = getattr(tensor, "cs_attributes", None)
    if attributes is None:
        attributes = {}
        tensor.cs_attributes = attributes
    attributes[name] = value
