"""Whether the model is in mixed precision, and the floating-point dtype a script makes its data
in — the later releases' questions about the half dtype (`cstorch.amp`):

    cstorch.amp.set_half_dtype("bfloat16")        # also turns mixed precision on, as the real one does
    cstorch.amp.mixed_precision()                 # True
    cstorch.amp.get_floating_point_dtype()        # torch.bfloat16 (torch.float32 while it is off)
    cstorch.amp.get_floating_point_dtype_str()    # "bfloat16"
    cstorch.amp.enable_mixed_precision(False)     # off again: the answers are float32's

Input pipelines ask `get_floating_point_dtype()` which dtype to make their batches in, so the
answer is the trainer's in its input workers too (they are forked from it, or run the same script
up to its DataLoader); changing either setting from inside an input worker is refused, as the
real package refuses it, because the model was compiled with the trainer's.

The flag is what these functions answer and nothing more: the system computes every compiled step
in the half dtype whatever it says (001, "Floating Point Precision": "the CS system only supports
mixed precision"), so turning it off on a CSX backend warns that the steps still will.
"""

from __future__ import annotations

import warnings

import torch

from csadmin.errors import InvalidArgument, InvalidState

from ..backend import process_backend
from .precision import get_half_dtype, get_half_dtype_str

_IN_WORKER = ("Enabling/disabling mixed precision in the dataloader is not allowed as it might conflict with what "
              "the model was compiled with.")


def mixed_precision() -> bool:
    """Whether mixed precision is on: set_half_dtype or enable_mixed_precision(True) was called."""
    return process_backend.current().mixed_precision


def enable_mixed_precision(enable: bool = True) -> bool:
    """Turn mixed precision on or off (before the model is built); returns the new setting."""
    backend = process_backend.current()
    if backend.is_input_worker:
        raise InvalidState(_IN_WORKER, hint="Enable or disable mixed precision in the script, before it "
                                            "constructs the model, not in the input function.")
    if not isinstance(enable, bool):
        raise InvalidArgument(f"Expected a boolean value, got: {type(enable)}",
                              hint="Pass True or False.")
    if not enable and backend.kind == "CSX":
        warnings.warn(f"Mixed precision was turned off, but the system computes every compiled step in "
                      f"{get_half_dtype_str()} (it only supports mixed precision): get_floating_point_dtype() "
                      f"now answers float32, the steps still compute in the half dtype.", stacklevel=2)
    backend.mixed_precision = enable
    return enable


def get_floating_point_dtype(default: torch.dtype = torch.float32) -> torch.dtype:
    """The half dtype's torch stand-in when mixed precision is on, else `default`."""
    return get_half_dtype() if mixed_precision() else default


def get_floating_point_dtype_str(default: str = "float32") -> str:
    """The half dtype's name ("float16", "bfloat16", "cbfloat16") when mixed precision is on, else
    `default`."""
    return get_half_dtype_str() if mixed_precision() else default
