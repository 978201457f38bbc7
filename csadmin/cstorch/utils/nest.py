"""`cstorch.utils.nest`: walking nested structures (dicts, lists, tuples of tensors and other
values) with each item's scope, the path of keys and indices that leads to it.

    for scope, tensor in visit_torch_tensors(batch, scope=["input"]):   # (["input", "x", "0"], t) …
        print(".".join(scope), tensor.shape)
    halves = map_torch_tensors(lambda scope, t: t.half(), batch)         # the same structure, mapped
    _, spec = torch.utils._pytree.tree_flatten(state_dict)
    names = [".".join(s) for s in recurse_spec(spec)]                     # "model.fc.weight", …

A scope is a list of strings: a dict's (or UserDict's) keys as `str(key)`, a list's or tuple's
indices as `str(i)` (a namedtuple is a tuple here). The visit functions walk dicts, UserDicts,
lists and tuples and yield every other item `select_fn` accepts, in the structure's order; with
`strict`, an item that is neither a container nor selected is a ValueError, as in the real
package. The map functions and `recurse_spec` go by torch's pytree, so they see what it flattens
(OrderedDicts, namedtuples, …); a namedtuple's fields are scoped by position, as the real
package scopes them. `diff` names where two structures differ, by their flattened scopes.

The real package also lets a library register visit functions for its own container types and
ship them to input workers (register_visit_fn, serialize_visit_fns); they are not here: the
containers above are the ones walked.
"""

from __future__ import annotations

from collections import UserDict
from inspect import isclass
from typing import Any, Callable, Generator, List, Optional, Tuple, Union

import torch
from torch.utils._pytree import TreeSpec, tree_flatten, tree_unflatten

TScope = List[str]
TNested = Union[Any, list, tuple, dict]
TSelectFn = Callable[[Any], bool]


def _children(struct) -> Optional[list]:
    """(scope, item) for each item of a container the visit functions walk; None for a leaf."""
    if isinstance(struct, (dict, UserDict)):
        return [([str(k)], v) for k, v in struct.items()]
    if isinstance(struct, (list, tuple)):
        return [([str(i)], v) for i, v in enumerate(struct)]
    return None


def visit_structure(data_structure: TNested, select_fn: TSelectFn, strict: bool = False,
                    scope: Optional[TScope] = None) -> Generator[Tuple[TScope, Any], None, None]:
    """Yield (scope, item) for every item of the nested structure that `select_fn` accepts, depth
    first in the structure's order; `scope` (default []) prefixes every scope. With `strict`, an
    item that is neither a dict/list/tuple nor selected is a ValueError."""
    scope = list(scope or [])
    children = _children(data_structure)
    if children is not None:
        for key, value in children:
            yield from visit_structure(value, select_fn, strict, scope + key)
    elif select_fn(data_structure):
        yield scope, data_structure
    elif strict:
        raise ValueError(f"Unknown data structure: {data_structure}")


def visit_torch_tensors(data_structure: TNested, strict: bool = False,
                        scope: Optional[TScope] = None) -> Generator[Tuple[TScope, torch.Tensor], None, None]:
    """Yield (scope, tensor) for every torch tensor of the nested structure."""
    yield from visit_structure(data_structure, lambda item: isinstance(item, torch.Tensor), strict, scope)


def visit_device_tensors(data_structure: TNested, device_type: str, strict: bool = False,
                         scope: Optional[TScope] = None) -> Generator[Tuple[TScope, torch.Tensor], None, None]:
    """Yield (scope, tensor) for every tensor of the nested structure on a `device_type` device
    ("cpu", "cuda")."""
    for s, tensor in visit_torch_tensors(data_structure, strict, scope):
        if tensor.device.type == device_type:
            yield s, tensor


def recurse_spec(spec: TreeSpec, scope: Optional[TScope] = None) -> Generator[TScope, None, None]:
    """Yield the scope of each leaf of a pytree spec (torch.utils._pytree.tree_flatten's), in the
    order of the flattened leaves: a dict's keys, a sequence's (or namedtuple's) positions."""
    if spec.num_leaves == 0:
        return
    scope = list(scope or [])
    children = [spec.child(i) for i in range(spec.num_children)]
    context = spec.context
    if isclass(context) and issubclass(context, tuple) and hasattr(context, "_fields"):
        context = None  # a namedtuple's context is its class: its fields go by position
    if context:
        for key, child in zip(context, children):
            yield from recurse_spec(child, scope + [str(key)])
    elif not children:
        yield scope
    else:
        for i, child in enumerate(children):
            yield from recurse_spec(child, scope + [str(i)])


def map_structure(map_fn: Callable, data_structure: TNested, select_fn: TSelectFn,
                  scope: Optional[TScope] = None):
    """The structure with every leaf `select_fn` accepts replaced by `map_fn(scope, leaf)` (the
    others kept), rebuilt as torch's pytree flattened it."""
    leaves, spec = tree_flatten(data_structure)
    mapped = [map_fn(s, leaf) if select_fn(leaf) else leaf for s, leaf in zip(recurse_spec(spec, scope), leaves)]
    return tree_unflatten(mapped, spec)


def map_torch_tensors(map_fn: Callable, data_structure: TNested, scope: Optional[TScope] = None):
    """The structure with every torch tensor replaced by `map_fn(scope, tensor)`."""
    return map_structure(map_fn, data_structure, lambda item: isinstance(item, torch.Tensor), scope)


def diff(data_structure_1: TNested, data_structure_2: TNested) -> Generator[str, None, None]:
    """Yield a line for each difference of two structures: the keys only one has, then each
    common key whose values differ (`!=`; tensors are compared as one bool each, so compare
    structures of plain values or of one-element tensors)."""
    flat = []
    for struct in (data_structure_1, data_structure_2):
        leaves, spec = tree_flatten(struct)
        flat.append({".".join(s): leaf for leaf, s in zip(leaves, recurse_spec(spec))})
    first, second = flat
    if set(first) != set(second):
        yield (f"Data structures have differing keys.\n"
               f"Keys only in data structure 1: {sorted(set(first) - set(second))}\n"
               f"Keys only in data structure 2: {sorted(set(second) - set(first))}\n")
    for key, value in first.items():
        if key in second and value != second[key]:
            yield f"Found mismatching values for {key}: {value} != {second[key]}"
