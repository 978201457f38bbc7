"""`cstorch.utils.num_kv_groups.groups_annotater(num_kv_groups)`: tag the operations a function
runs with the number of key/value groups of grouped-query attention (ModelZoo's attention
layers), a compiler hint.

A function decorated with it runs unchanged; on CSX its body runs under a core.annotation of
GroupsConfig with the attribute ("num_kv_groups", num_kv_groups) (no tag when None), as the real
module does; off the system (a CPU or GPU backend, or none yet) it returns the function as it is.
"""

from dataclasses import dataclass
from typing import Optional

from csadmin.errors import InvalidArgument

from ..backend import use_cs
from ..core.annotation import AnnotationMode, create_annotation


@dataclass
class GroupsConfig(AnnotationMode.Config):
    """The number of key/value groups (None: not said), for the forward and backward passes."""

    num_kv_groups: Optional[int] = None
    enable_fwd: bool = True
    enable_bwd: bool = True

    def __post_init__(self):
        if not isinstance(self.num_kv_groups, (int, type(None))):
            raise InvalidArgument(f"Expected `num_kv_groups` to be {int}, got {type(self.num_kv_groups)}.")


def get_attribute(config: GroupsConfig, is_backward: bool) -> AnnotationMode.Attribute:
    """The tag: ("num_kv_groups", the count)."""
    return AnnotationMode.Attribute("num_kv_groups", config.num_kv_groups)


def groups_annotater(num_kv_groups: Optional[int] = None):
    """A decorator tagging a function's operations with `num_kv_groups` on CSX; the identity elsewhere."""
    if not use_cs():
        return lambda fn: fn
    return create_annotation(GroupsConfig, get_attribute, num_kv_groups=num_kv_groups)
