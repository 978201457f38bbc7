"""`cstorch.utils.kernel.kernel_annotater(kernel)`: tag the operations a function runs with the
attention kernel the compiler should use (ModelZoo's AttentionLayer: `attention_kernel`).

    using_kernel = kernel_annotater("optimized_beta")
    scores = using_kernel(attention)(q, k, v)

A compiler hint: the function runs unchanged; on CSX its body runs under a core.annotation of
KernelConfig with the attribute ("kernel", kernel) (no tag when kernel is None), as the real
module does; off the system (a CPU or GPU backend, or none yet) it returns the function as it is.
"""

from dataclasses import dataclass
from typing import Optional

from csadmin.errors import InvalidArgument

from ..backend import use_cs
from ..core.annotation import AnnotationMode, create_annotation


@dataclass
class KernelConfig(AnnotationMode.Config):
    """The kernel's name (None: no kernel named), for the forward and backward passes."""

    kernel: Optional[str] = None
    enable_fwd: bool = True
    enable_bwd: bool = True

    def __post_init__(self):
        if not isinstance(self.kernel, (str, type(None))):
            raise InvalidArgument(f"Expected `kernel` to be {str}, got {type(self.kernel)}.")


def get_attribute(config: KernelConfig, is_backward: bool) -> AnnotationMode.Attribute:
    """The tag: ("kernel", the kernel's name)."""
    return AnnotationMode.Attribute("kernel", config.kernel)


def kernel_annotater(kernel: Optional[str] = None):
    """A decorator tagging a function's operations with `kernel` on CSX; the identity elsewhere."""
    if not use_cs():
        return lambda fn: fn
    return create_annotation(KernelConfig, get_attribute, kernel=kernel)
