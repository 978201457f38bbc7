"""Mixed precision as the system does it (001, "Floating Point Precision"; 002, "Use cbfloat16"):
weights are stored as float32, and everything but the weight update computes in a half format —
float16 (the default), bfloat16 or cbfloat16 (CB16) — with the casts inserted for you.

    cstorch.amp.set_half_dtype("cbfloat16")     # or "float16", "bfloat16", torch.float16, torch.bfloat16
    cstorch.amp.get_half_dtype()                # the torch dtype standing for it: torch.float16 for CB16
    cstorch.amp.get_half_dtype_str()            # "cbfloat16"
    cstorch.amp.use_bfloat16(True)              # R1.8's spelling of set_half_dtype("bfloat16")
    cstorch.amp.is_cbfloat16_tensor(t)          # t is float16 standing for CB16 values

The setting is the process's and is read when the first step compiles: setting it after that is
refused (the program is compiled). The half format itself (amp/formats.py) — its rounding, the dtype
a step hands its values back in — is `half_format()`. The setting is the backend's (backend/process_backend.py:
`process_backend.reset()` returns it to float16), read and written only through `half_format()` and
`set_half_dtype()`.

Every compile_step is captured under torch's autocast to `get_half_dtype()`, which inserts the
casts (001: "you do not need to insert them manually"), so a step need not enter
`cstorch.amp.autocast()` (doing so again is harmless). On a CPU or GPU backend, where steps run
eagerly in the model's precision, `autocast(dtype=None)` is torch's autocast as the real package
has it: on CPU bfloat16 only ("Mixed precision on CPU is only supported with bfloat16 …"). The update stays float32 because the optimizers'
elementwise ops are not among the ops autocast casts. `check_float32_weights(model)`
(cstorch.compile calls it) refuses a model whose weights are not float32.
"""

from __future__ import annotations

import contextlib

import torch

from csadmin.errors import InvalidArgument, InvalidState

from ..backend import process_backend
from ..backend.device import storage_device
from .formats import FORMATS, HalfFormat

_BY_DTYPE = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def half_format() -> HalfFormat:
    """The half format the steps of this process compute in."""
    return FORMATS[process_backend.current().half_dtype]


def set_half_dtype(value) -> torch.dtype:
    """Compute in `value`: "float16", "bfloat16", "cbfloat16", torch.float16 or torch.bfloat16.
    Returns the torch dtype that stands for it in the model (torch.float16 for cbfloat16, whose
    values this runtime carries in float32). Refused once a step has compiled."""
    backend = process_backend.current()
    if backend.is_input_worker:
        raise InvalidState("Setting half dtype in the dataloader is not allowed as it might conflict with what the "
                           "model was compiled with.",
                           hint="Set the half dtype in the script, before it constructs the model, not in the "
                                "input function.")
    name = _BY_DTYPE.get(value) if isinstance(value, torch.dtype) else value
    if not isinstance(name, str) or name not in FORMATS:
        raise InvalidArgument(
            f"Invalid half dtype: {value!r}. Accepted values are: \"float16\", \"bfloat16\", \"cbfloat16\", "
            f"torch.float16, torch.bfloat16.")
    run, was = backend.run, backend.half_dtype
    if (run.program is not None or run.capture is not None) and not run.finished and name != was:
        raise InvalidState(
            f"The half dtype cannot change to {name}: the first step compiled this run's program in {was}, "
            f"and a compiled program keeps its precision.",
            hint="Call set_half_dtype before the first compile_step call; run another half dtype in a separate "
                 "process.")
    backend.half_dtype = name  # the backend's setting: process_backend.reset() returns it to float16
    backend.mixed_precision = True  # setting the half dtype means mixed precision, as in the real package
    return FORMATS[name].proxy


def get_half_dtype() -> torch.dtype:
    """The torch dtype that stands for the half format in the model (float16 for cbfloat16)."""
    return half_format().proxy


def get_half_dtype_str() -> str:
    """The half format's name: "float16", "bfloat16" or "cbfloat16"."""
    return half_format().name


def is_cbfloat16_tensor(tensor: torch.Tensor) -> bool:
    """Whether `tensor` stands for cbfloat16 values: the half dtype is cbfloat16 and the tensor
    has its stand-in dtype (float16), as in a model written with get_half_dtype()."""
    return tensor.dtype == get_half_dtype() and get_half_dtype_str() == "cbfloat16"


def use_bfloat16(use: bool) -> None:
    """R1.8's switch: True computes in bfloat16, False in float16 (before the first step)."""
    if not isinstance(use, bool):
        raise InvalidArgument(f"use_bfloat16 takes True or False, not {use!r}.")
    set_half_dtype("bfloat16" if use else "float16")


def half_dtype() -> torch.dtype:
    """The dtype the step computes in, as autocast casts to it (`get_half_dtype()`)."""
    return get_half_dtype()


CPU_HALF = "Mixed precision on CPU is only supported with bfloat16."
CPU_HALF_HINT = ("Please call cstorch.amp.set_half_dtype(torch.bfloat16) or pass the dtype to "
                 "cstorch.amp.autocast(dtype=torch.bfloat16)")


@contextlib.contextmanager
def autocast(dtype: torch.dtype | None = None):
    """The script's `with cstorch.amp.autocast():`. On the system it is the capture's own
    context — torch's autocast to the half dtype, which every compile_step already runs under, so
    entering it changes nothing (the real CSX backend ignores it). On a CPU or GPU backend it is
    torch's autocast on the backend's device to `dtype` (default: the half dtype); on CPU only
    bfloat16 is allowed, as the real CPU backend says on entering. Before any backend it is
    refused, as the real one ("No active Cerebras backend found")."""
    backend = process_backend.current().require(
        hint="Create the backend first (cstorch.backend(...), or cstorch.configure(...) in R1.8).")
    if backend.kind not in ("CPU", "GPU"):
        with _device_autocast("cpu"):
            yield
        return
    dtype = get_half_dtype() if dtype is None else dtype
    if backend.kind == "CPU" and dtype != torch.bfloat16:
        raise InvalidArgument(CPU_HALF, hint=CPU_HALF_HINT)
    with torch.autocast("cpu" if backend.kind == "CPU" else "cuda", dtype=dtype) as context:
        yield context


def _device_autocast(device_type: str) -> torch.autocast:
    """torch's autocast on `device_type` to `get_half_dtype()`: the context every step is captured in."""
    return torch.autocast(device_type, dtype=get_half_dtype())


@contextlib.contextmanager
def step_autocast(tensors):
    """The capture's autocast on every device type `tensors` (a step's parameters and inputs)
    live on, the CPU's always: a step whose model lives on a CUDA device gets CUDA's casts, by
    torch's list for that device."""
    with contextlib.ExitStack() as stack:
        for device_type in dict.fromkeys(["cpu", *(storage_device(t).type for t in tensors)]):
            stack.enter_context(_device_autocast(device_type))
        yield


def check_float32_weights(module: torch.nn.Module) -> None:
    """Refuse a model whose floating-point parameters are not float32."""
    other = [(name, p.dtype) for name, p in module.named_parameters() if p.is_floating_point() and p.dtype != torch.float32]
    if other:
        name, dtype = other[0]
        raise InvalidArgument(
            f"Only mixed precision is supported: weights are stored as float32, but {name} is {dtype} "
            f"({len(other)} such parameters).",
            hint="Keep the model in float32 (model.float()); the half-precision casts are inserted for you.")
