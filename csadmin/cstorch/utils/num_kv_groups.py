"""`cstorch.utils.num_kv_groups`: groups_annotater, which tags the operations of an attention
function with its number of key/value groups (ModelZoo's multi-query attention layers). A
compiler hint, as every core.annotation: no value changes, and off the CSX backend the function
is returned as it is (the real package's rule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..backend import use_cs
from ..core.annotation import AnnotationMode, create_annotation


@dataclass
class GroupsConfig(AnnotationMode.Config):
    """The number of key/value groups (None: as many as heads)."""

    num_kv_groups: Optional[int] = None
    enable_fwd: bool = True
    enable_bwd: bool = True

    def __post_init__(self):
        if not isinstance(self.num_kv_groups, (int, type(None))):
            raise TypeError(f"Expected `num_kv_groups` to be {int}, got {type(self.num_kv_groups)}.")


def get_attribute(config: GroupsConfig, is_backward: bool):
    """The attribute the annotated operations carry: `num_kv_groups`."""
    return AnnotationMode.Attribute("num_kv_groups", config.num_kv_groups)


def groups_annotater(num_kv_groups: Optional[int] = None):
    """A decorator that annotates a function's operations with `num_kv_groups` (on CSX only)."""
    if not use_cs():
        return lambda fn: fn
    return create_annotation(GroupsConfig, get_attribute, num_kv_groups=num_kv_groups)
