"""`cstorch.experimental.Compression(format, param_filter)`: mark a model's weights for the system
to store in a compressed (MX) format (ModelZoo's WeightCompression callback).

    model.apply(cstorch.experimental.Compression(format="mx8-e3m4", param_filter=["fc1.weight", "fc2.*"]))

As in the real class: the format is one of FORMATS (another, or a non-string, is refused); the
filter's globs pick parameters and buffers by full name when applied; before each forward the
chosen tensors are marked with the compiler attribute `cs.compress` = format on CSX (kept on the
tensor, cstorch.lib.cerebras_pytorch_lib), and nothing is marked on a CPU or GPU backend, whose
set_attribute does nothing in the real package either. The compression itself happens in the
system's storage and is not modelled: the values a step computes are unchanged.
"""

from itertools import chain
from typing import List, Literal, Union, get_args

import torch

from csadmin.errors import InvalidArgument

from ..backend import use_cs
from ..lib.cerebras_pytorch_lib import set_attribute
from ..utils.utils import convert_glob_to_regex

FormatLiteral = Literal["mx8", "mx8-e3m4", "mx8-e4m3", "mx9", "mx10", "mx10-e2m7"]
FORMATS = get_args(FormatLiteral)


class Compression:
    """The formats and filters of the real class (see the module docstring)."""

    def __init__(self, format: FormatLiteral, param_filter: Union[str, List[str]]):
        if not isinstance(format, str):
            raise InvalidArgument(f"Expected format to be a string, but got type {type(format)}")
        if format not in FORMATS:
            raise InvalidArgument(f'Expected format to be one of {FORMATS}, but got "{format}"')
        self.format = format
        self.param_filter = [convert_glob_to_regex(f) for f in ([param_filter] if isinstance(param_filter, str)
                                                                  else param_filter)]
        self.compress_tensors = torch.utils.weak.WeakTensorKeyDictionary()

    def apply(self, module: torch.nn.Module) -> None:
        """Choose `module`'s parameters and buffers the filter matches; mark them before each forward."""
        if not isinstance(module, torch.nn.Module):
            raise InvalidArgument(f"Expected torch.nn.Module but got {type(module)}")
        for name, tensor in chain(module.named_parameters(), module.named_buffers()):
            if any(pattern.fullmatch(name) for pattern in self.param_filter):
                self.compress_tensors[tensor] = name
        module.register_forward_pre_hook(self._forward_pre_hook)

    def _forward_pre_hook(self, module, args) -> None:
        for tensor in self.compress_tensors:
            self.annotate(tensor)

    def annotate(self, tensor: torch.Tensor) -> None:
        """Mark `tensor` with the format on CSX (nothing elsewhere)."""
        if use_cs():
            set_attribute(tensor, "cs.compress", self.format)

    def __repr__(self) -> str:
        return f"Compression(format={self.format}, param_filter: {self.param_filter})"
