"""The backend's device (`backend.device`): where the model's tensors are made and live.

    with backend.device:            # the later releases' way to build a model for the backend
        model = Net()               # its tensors are made on backend.device.torch_device

A CSX backend's tensors live on this CPU (the simulated system computes with PyTorch here, and
the weights are streamed to csd's system as the run's program says); a CPU backend's too; a GPU
backend's on the CUDA device. Entering the device makes its torch device the default one for
tensors made inside, as torch's own `with torch.device(...)` does; it may be entered again
inside itself. `str()` is what the real device says: "CSX", "cpu" or "cuda".

R1.8's compiled parameters say they are on "xla" (XlaParameter, present_on_xla); the runtime asks
storage_device(t) where a tensor's data really is, and a step's tensors asked for on "xla" are
made there (off_xla).
"""

from __future__ import annotations

import torch


class Device:
    """The device of a backend of `kind` ("CSX", "CPU" or "GPU")."""

    def __init__(self, kind: str):
        self.kind = kind
        self.torch_device = torch.device("cuda" if kind == "GPU" else "cpu")
        self._entered: list = []  # torch device contexts, innermost last

    @property
    def type(self) -> str:
        """The torch device type tensors get ("cpu" or "cuda")."""
        return self.torch_device.type

    def move_to_device(self, struct):
        """`struct` (a module, a tensor, or nested lists/tuples/dicts of tensors) on this device."""
        if isinstance(struct, torch.nn.Module):
            return struct.to(self.torch_device)
        return torch.utils._pytree.tree_map_only(torch.Tensor, lambda t: t.to(self.torch_device), struct)

    def __enter__(self) -> "Device":
        context = torch.device(self.torch_device)
        context.__enter__()
        self._entered.append(context)
        return self

    def __exit__(self, *exc) -> None:
        self._entered.pop().__exit__(*exc)

    def __str__(self) -> str:
        return "CSX" if self.kind == "CSX" else self.type

    def __repr__(self) -> str:
        return f"device(type='{self}')"


# R1.8's compile moves a model's parameters to the lazy tensor device torch_xla provides, and
# ModelZoo 1.8's cstorch flow asserts `all(p.device.type == "xla" for p in model.parameters())`
# right after. Here the data stays on this CPU; what changes is what the parameters answer.
XLA = torch.device("xla", 0)


class XlaParameter(torch.nn.Parameter):
    """A parameter of a model R1.8's compile prepared: `.device` is xla:0, as the real one's is;
    everything else is a Parameter's (values, gradients, identity, plain-tensor state_dict entries)."""

    @property
    def device(self) -> torch.device:
        return XLA


def present_on_xla(model: torch.nn.Module) -> None:
    """Make every parameter of `model` an XlaParameter (the same objects, reclassed)."""
    for parameter in model.parameters():
        if type(parameter) is torch.nn.Parameter:
            parameter.__class__ = XlaParameter


def _is_xla(device) -> bool:
    if isinstance(device, torch.device):
        return device.type == "xla"
    return isinstance(device, str) and device.split(":")[0] == "xla"


def off_xla(func, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """A torch function call's (args, kwargs) with the device "xla" it asks for replaced by the
    CPU, where an XlaParameter's data is: R1.8's models make tensors on their parameters' device
    (`torch.arange(n, device=p.device)`, `t.to(p.device)`), which this CPU build of torch has no
    kernels for. The step's capture applies it to every call (core/capture.py)."""
    if _is_xla(kwargs.get("device")):
        kwargs = {**kwargs, "device": _CPU}
    if func is torch.Tensor.to and len(args) > 1 and _is_xla(args[1]):
        args = (args[0], _CPU, *args[2:])
    return args, kwargs


_CPU = torch.device("cpu")


def storage_device(tensor: torch.Tensor) -> torch.device:
    """The device `tensor`'s data is on, whatever its class answers for `.device` (an
    XlaParameter's "xla"): what the runtime computes with."""
    return torch.Tensor.device.__get__(tensor)
