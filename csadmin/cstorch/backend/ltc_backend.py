"""`cstorch.backend.ltc_backend`'s hooks on the tensors a CSX run hands back: the real module's
`register_before_tensor_to_cpu(hook)` and `register_after_tensor_to_cpu(hook)`.

    handle = register_after_tensor_to_cpu(lambda tensor, name: ...)   # ModelZoo's DurationProfiler
    handle.remove()

On the system a step's tensors live on the appliance; those a step closure reads are fetched to
this process after the step. Here they are the step program's outputs handed to the recorded
closures (core/program.py), and each is announced to the hooks as it is handed over: the before
hooks with the step's tensor, the after hooks with the one the closure receives, each with a
name (`<closure>.<n>`, n its place among the closure's arguments). A CPU or GPU run fetches nothing, so
the hooks are not called there, as in the real package (whose CPU and GPU backends never call
them). The hooks are the process backend's, so they last as long as it does.
"""

from typing import Callable

import torch
from torch.utils.hooks import RemovableHandle

from . import process_backend

TensorToCpuHook = Callable[[torch.Tensor, str], None]


def register_before_tensor_to_cpu(hook: TensorToCpuHook) -> RemovableHandle:
    """Call `hook(tensor, name)` before each tensor is fetched from the run."""
    return _register(process_backend.current().before_tensor_to_cpu_hooks, hook)


def register_after_tensor_to_cpu(hook: TensorToCpuHook) -> RemovableHandle:
    """Call `hook(tensor, name)` with each tensor fetched from the run, once it is here."""
    return _register(process_backend.current().after_tensor_to_cpu_hooks, hook)


def _register(hooks: dict, hook: TensorToCpuHook) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def fetched(tensor: torch.Tensor, name: str) -> torch.Tensor:
    """Announce a tensor the run hands back (core/program.py calls it): the before hooks, then the
    after hooks, each with it and its name; returns it."""
    backend = process_backend.current()
    for hook in list(backend.before_tensor_to_cpu_hooks.values()):
        hook(tensor, name)
    for hook in list(backend.after_tensor_to_cpu_hooks.values()):
        hook(tensor, name)
    return tensor
