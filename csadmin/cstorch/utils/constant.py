"""`cstorch.make_constant(tensor)`: mark a tensor a constant of the traced step.

    sin, cos = cstorch.make_constant(sin), cstorch.make_constant(cos)   # inside a model's forward

On a CSX backend the real package makes the traced graph hold the tensor's value as a constant
node, which the compiler folds instead of streaming it; elsewhere it returns its argument. The
values are the same either way, and so they are here: the tensor itself is returned, on every
backend. A step's program (core/capture.py) replays the ops that made a tensor inside the step,
and reads one made before it as state, which yields the values the folded constant has.
On a CSX backend, where the real package's graph library accepts only a tensor, anything else is
refused (InvalidArgument); on a CPU or GPU backend it is returned as it is, as the real one does.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

from ..backend import use_cs


def make_constant(tensor: torch.Tensor) -> torch.Tensor:
    """`tensor`, as a constant of the traced step (see the module docstring)."""
    if use_cs() and not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"cstorch.make_constant expects a torch.Tensor, got {type(tensor).__name__}.",
                              hint="Pass the tensor to fold into the step (torch.tensor(value) for a Python value).")
    return tensor
