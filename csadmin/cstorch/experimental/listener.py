"""`cstorch.experimental.listener.register_traced_tensor_hook`: listen to the tensors a step
makes while it is traced (ModelZoo's tensor-listener callbacks: DumpAvailableTensorNames,
SummaryTensorListener, NormTensorListener).

    handle = register_traced_tensor_hook(lambda tensor, name: ...)
    handle.remove()

While a CSX step is captured (core/capture.py), each torch function's tensor results are handed
to every hook with a name: the current name scope (cstorch.name_scope's) and the function's name,
dotted, with `.1`, `.2`, … for its later uses in the same trace, as the real package names them
(`grad_norm.mul`, `grad_norm.mul.1`). What a hook computes from the tensor is captured with the
step, so it runs at every replay (a summary a hook makes is the step's summary, as on the
system). Dunder accessors and copies (`clone`, `copy`, `detach`) are left out, as in the real
package. Unlike the real package, the backward pass's tensors are not handed to the hooks (only
the functions the step calls itself), and a CPU or GPU step, which is not traced, calls none.
"""

import collections
import re
from typing import Callable

import torch
from torch.utils._pytree import tree_flatten
from torch.utils.hooks import RemovableHandle

from ..backend import process_backend

TracedTensorHook = Callable[[torch.Tensor, str], None]
_SKIPPED = ("clone", "copy", "detach")


def register_traced_tensor_hook(hook: TracedTensorHook) -> RemovableHandle:
    """Call `hook(tensor, name)` with each tensor a traced step makes (see the module docstring)."""
    hooks = process_backend.current().traced_tensor_hooks
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


class TraceListener:
    """One trace's listening (core/capture.py makes one per capture): names are unique within it."""

    def __init__(self):
        self._uses = collections.Counter()

    def traced(self, func, result) -> None:
        """Hand `func`'s tensor results to the hooks, named (see the module docstring)."""
        backend = process_backend.current()
        hooks = list(backend.traced_tensor_hooks.values())
        func_name = getattr(func, "__name__", "")
        if not hooks or not func_name or re.fullmatch(r"__[_a-zA-Z0-9]+__", func_name) or func_name in _SKIPPED:
            return
        scope = backend.current_scope_name
        parts = [scope.scope_name, scope.scope_type] if scope is not None else []
        base = ".".join(part for part in [*parts, func_name] if part)
        for tensor in tree_flatten(result)[0]:
            if isinstance(tensor, torch.Tensor):
                count = self._uses[base]
                self._uses[base] += 1
                name = f"{base}.{count}" if count else base
                for hook in hooks:
                    hook(tensor, name)
