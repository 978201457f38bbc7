"""`cstorch.storage.constants`: the names of a 2.x checkpoint file's root attributes (the real
module's), read by ModelZoo's checkpoint tools (`__CSTORCH_VERSION__`) and written by
format_v2.py."""

__SPEC__ = "__spec__"
__VERSION__ = "__version__"
__CSTORCH_VERSION__ = "__cstorch_version__"
CURRENT_CKPT_FORMAT_VERSION = 0.5
