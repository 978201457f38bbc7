"""A state dict's structure, as the real package's checkpoints record it: torch's pytree "tree
spec" (protocol 1 of `torch.utils._pytree.treespec_dumps`, whose JSON the 2.x files hold) and the
dotted key of every leaf (`optimizer.state.0.exp_avg`, as `cerebras.pytorch.utils.nest.recurse_spec`
names them).

    leaves, spec = flatten(state_dict)     # containers: dict, OrderedDict, list, tuple, set
    keys = dotted_keys(spec)               # one per leaf, in order
    text = dumps(spec); spec = loads(text) # the JSON the files carry
    state_dict = unflatten(spec, leaves)

A Spec is (type name, context, children): the type name torch serializes ("builtins.dict",
"collections.OrderedDict", "builtins.list", "builtins.tuple", "builtins.set"; None for a leaf),
the context (a dict's keys in order; None otherwise) and the child specs. Written here from the
documented format rather than with torch's private pytree module, whose names move between torch
releases; nothing read is ever executed.
"""

from __future__ import annotations

import collections
import json
from typing import NamedTuple

DICT, ODICT, LIST, TUPLE, SET = ("builtins.dict", "collections.OrderedDict", "builtins.list",
                                 "builtins.tuple", "builtins.set")
_CONTAINERS = {dict: DICT, collections.OrderedDict: ODICT, list: LIST, tuple: TUPLE, set: SET}
_MAKE = {DICT: dict, ODICT: collections.OrderedDict, LIST: list, TUPLE: tuple, SET: set}
_KEY_TYPES = (str, int, float, bool, type(None))
PROTOCOL = 1
MAX_DEPTH = 100  # containers within containers; a state dict has a handful, a loop has no end


class Spec(NamedTuple):
    type: str | None  # None: a leaf
    context: list | None  # a dict's keys in order
    children: tuple

    @property
    def num_leaves(self) -> int:
        return 1 if self.type is None else sum(child.num_leaves for child in self.children)


LEAF = Spec(None, None, ())


class TreeError(ValueError):
    """A structure that cannot be recorded (on save) or a recorded spec that is malformed (on load);
    the message says where."""


def flatten(value, where: str = "state_dict", depth: int = 0) -> tuple[list, Spec]:
    """The leaves of `value` in order and its spec. Only the exact container types are walked
    (torch's pytree does the same: a dict subclass or a namedtuple is a leaf)."""
    if depth > MAX_DEPTH:
        raise TreeError(f"Cannot save a state dict nested more than {MAX_DEPTH} levels deep (or one that "
                        "contains itself).")
    name = _CONTAINERS.get(type(value))
    if name is None:
        return [value], LEAF
    if name in (DICT, ODICT):
        keys = list(value)
        for key in keys:
            if type(key) not in _KEY_TYPES:
                raise TreeError(f"Cannot save {where}: its key {key!r} is a {type(key).__name__}; a checkpoint's "
                                "dict keys are str, int, float, bool or None.")
        items = [(value[key], f"{where}[{key!r}]") for key in keys]
    else:
        keys = None
        items = [(item, f"{where}[{i}]") for i, item in enumerate(value)]
    leaves, children = [], []
    for item, inner in items:
        found, spec = flatten(item, inner, depth + 1)
        leaves.extend(found)
        children.append(spec)
    return leaves, Spec(name, keys, tuple(children))


def unflatten(spec: Spec, leaves: list):
    """The structure `spec` describes, filled with `leaves` in order."""
    feed = iter(leaves)
    value = _build(spec, feed)
    if next(feed, _END) is not _END:
        raise TreeError("more values than the spec has leaves")
    return value


_END = object()


def _build(spec: Spec, feed):
    if spec.type is None:
        value = next(feed, _END)
        if value is _END:
            raise TreeError("fewer values than the spec has leaves")
        return value
    items = [_build(child, feed) for child in spec.children]
    if spec.type in (DICT, ODICT):
        return _MAKE[spec.type](zip(spec.context, items))
    return _MAKE[spec.type](items)


def dotted_keys(spec: Spec, scope: tuple = ()) -> list[str]:
    """Each leaf's key: the path of dict keys and list positions joined by "." (str() of a key).
    A container without leaves has none (an empty dict records nothing but its spec)."""
    if spec.type is None:
        return [".".join(scope)]
    names = spec.context if spec.context else range(len(spec.children))
    return [key for name, child in zip(names, spec.children) if child.num_leaves
            for key in dotted_keys(child, scope + (str(name),))]


def paths(spec: Spec, where: str = "state_dict") -> list[str]:
    """Each leaf's place as Python spells it (`state_dict['model']['w']`), for messages."""
    if spec.type is None:
        return [where]
    names = spec.context if spec.context is not None else range(len(spec.children))
    return [path for name, child in zip(names, spec.children) if child.num_leaves
            for path in paths(child, f"{where}[{name!r}]")]


# -- the JSON torch's treespec_dumps writes ---------------------------------------------------------


def dumps(spec: Spec) -> str:
    return json.dumps([PROTOCOL, _to_json(spec)])


def _to_json(spec: Spec) -> dict:
    if spec.type is None:
        return {"type": None, "context": None, "children_spec": []}
    return {"type": spec.type, "context": json.dumps(spec.context),
            "children_spec": [_to_json(child) for child in spec.children]}


def loads(text: str) -> Spec:
    try:
        protocol, root = json.loads(text)
    except (TypeError, ValueError) as e:
        raise TreeError(f"the structure is not a tree spec ({e})") from None
    if protocol != PROTOCOL:
        raise TreeError(f"the structure is tree spec protocol {protocol!r}; this reader takes {PROTOCOL}")
    return _from_json(root, 0)


def _from_json(node, depth: int) -> Spec:
    if depth > MAX_DEPTH:
        raise TreeError(f"entries nested more than {MAX_DEPTH} levels deep, which no state dict is")
    if not isinstance(node, dict) or not isinstance(node.get("children_spec"), list):
        raise TreeError(f"a tree spec node is malformed: {str(node)[:80]}")
    name = node.get("type")
    if name is None:
        return LEAF
    if name not in _MAKE:
        raise TreeError(f"the structure holds a {name}, which is not a dict, list, tuple or set")
    children = tuple(_from_json(child, depth + 1) for child in node["children_spec"])
    context = json.loads(node["context"]) if isinstance(node.get("context"), str) else None
    if name in (DICT, ODICT):
        if not isinstance(context, list) or len(context) != len(children):
            raise TreeError(f"a {name}'s keys do not match its entries")
        return Spec(name, context, children)
    return Spec(name, None, children)


def sketch(spec: Spec):
    """The structure with "*" for every leaf: the readable first half of the files' `__spec__`
    (None where JSON cannot hold it)."""
    value = unflatten(spec, ["*"] * spec.num_leaves)
    try:
        json.dumps(value)
    except TypeError:
        return None
    return value
