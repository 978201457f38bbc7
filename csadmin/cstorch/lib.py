"""`cstorch.lib`: `cerebras_pytorch_lib`, the real package's compiled library (its lazy-tensor
backend's C++ half). ModelZoo calls one function of it on the CSX backend: set_attribute(tensor,
key, value), which tags the operation producing `tensor` for the compiler (its source-variable
names, for numeric validation against tensor dumps). Here the compile is csd's simulated one,
which takes no such hints and dumps no tensors: the call is checked and changes nothing, as a
hint changes no value on the real system. Any other name of the library is not built here and
says so with a coded error.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidState


class NotBuilt(InvalidState, AttributeError):
    """A name of the compiled library that is not built here (an AttributeError too, so that
    hasattr and getattr with a default answer as they would for any missing name)."""


class _CompiledLibrary:
    """The names of cerebras_pytorch_lib that are built here (see the module docstring)."""

    @staticmethod
    def set_attribute(tensor, key: str, value) -> None:
        """Tag `tensor`'s operation with the compiler attribute `key` = `value` (a hint: nothing
        changes here)."""
        if not isinstance(tensor, torch.Tensor) or not isinstance(key, str):
            raise TypeError(f"set_attribute(tensor, key, value) takes a tensor and a str key, not "
                            f"{type(tensor).__name__} and {type(key).__name__}.")

    def __getattr__(self, name: str):
        raise NotBuilt(f"cerebras.pytorch.lib.cerebras_pytorch_lib.{name} is not built here: it is the real "
                       "package's compiled lazy-tensor library, and this runtime has none.",
                       "Use the cstorch API (docs/cstorch/generations.md lists what is built).")


cerebras_pytorch_lib = _CompiledLibrary()
