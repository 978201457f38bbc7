"""`cstorch.backend.ltc_backend`: register_after_tensor_to_cpu, a hook called each time a tensor
of the run reaches this process from the system (ModelZoo's DurationProfiler times its batches by
it).

    handle = register_after_tensor_to_cpu(lambda tensor, name: ...)
    handle.remove()

On the CSX backend the tensors a run hands to this process are those its step closures read, on
the steps they are due (utils/step_closures.py): each hook is called with each of them, before
the closure runs, named `<closure>.<position>` (the closure's name, the tensor's place among its
arguments). On the CPU and GPU backends nothing comes from a system and no hook is called, as in
the real package, whose hooks belong to its lazy-tensor (CSX) backend.
"""

from __future__ import annotations

from torch.utils.hooks import RemovableHandle

from . import process_backend


def register_after_tensor_to_cpu(hook) -> RemovableHandle:
    """Call `hook(tensor, name)` for each tensor the run hands to this process; returns the handle
    that removes it."""
    hooks = process_backend.current().after_tensor_to_cpu_hooks
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle
