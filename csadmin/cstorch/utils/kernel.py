"""`cstorch.utils.kernel`: kernel_annotater, which tags the operations of a function with the
kernel the compiler should use for them (ModelZoo's attention layers name theirs). A compiler
hint, as every core.annotation: no value changes, and off the CSX backend the function is
returned as it is (the real package's rule)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..backend import use_cs
from ..core.annotation import AnnotationMode, create_annotation


@dataclass
class KernelConfig(AnnotationMode.Config):
    """The kernel to use (None: the compiler's choice)."""

    kernel: Optional[str] = None
    enable_fwd: bool = True
    enable_bwd: bool = True

    def __post_init__(self):
        if not isinstance(self.kernel, (str, type(None))):
            raise TypeError(f"Expected `kernel` to be {str}, got {type(self.kernel)}.")


def get_attribute(config: KernelConfig, is_backward: bool):
    """The attribute the annotated operations carry: `kernel`."""
    return AnnotationMode.Attribute("kernel", config.kernel)


def kernel_annotater(kernel: Optional[str] = None):
    """A decorator that annotates a function's operations with `kernel` (on CSX only)."""
    if not use_cs():
        return lambda fn: fn
    return create_annotation(KernelConfig, get_attribute, kernel=kernel)
