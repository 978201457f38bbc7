"""Capture one step as a static program: every aten op the first (eager) call runs, as an FX graph.

    cap = Capture(inputs, step_fn.described)
    with cap:                             # records forward, backward and optimizer ops
        result = step_fn(*args)
    cap.output(tensors)                   # the graph returns the result's and the grads' nodes
    cap.restore()                         # the state is back to its values before; cap.graph is the program

How each tensor an op touches enters the graph, in this order:
  * made by an earlier op of the step → that op's node (also when autograd hands back a shallow
    copy of it: same storage, offset, shape, strides and dtype);
  * a step input (a batch tensor) → `inputs[i]`;
  * a view of either that no op made (autograd's saved views) → `as_strided` of its base;
  * anything else existed before the step: **persistent state** (parameters, optimizer and
    scheduler tensors, metric counters), referenced by identity as `state[k]` and updated in
    place on replay — which is why cstorch's optimizers keep every value in tensors updated with
    in-place torch ops.
The first sight of a persistent tensor clones it, and `restore()` copies the clones back (last
seen first, so that aliases end with their oldest value) and restores the RNG: capturing leaves
no trace, and step 1 is the program's first replay like every later step.

A class-index loss given a target narrower than int64 reads it widened by a recorded cast
(class_targets.py), as the system takes any integer labels.

Reading a tensor's value inside the step (`.item()`, `bool(t)`, `if t:`, printing, `.tolist()`,
`.numpy()`) raises InvalidState naming the operation (a function mode sees the Python call,
the dispatch mode every `_local_scalar_dense` that slips past it).
"""

from __future__ import annotations

import operator
import os
import traceback
import weakref

import torch
from torch import fx
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from csadmin.errors import InvalidState

from ..backend.device import off_xla, storage_device
from ..experimental.listener import TraceListener
from .class_targets import widen_target
from .static_shapes import data_dependent_error, data_dependent_op

aten = torch.ops.aten

# 004, "Constructing the training step".
READ_RULE = "it is not allowed to read a tensor's contents outside of a step closure"

# Tensor methods that read values into Python, as the user wrote them.
READS = {
    "item": "Tensor.item()", "tolist": "Tensor.tolist()", "numpy": "Tensor.numpy()",
    "__array__": "numpy.asarray(tensor)", "__bool__": "bool(tensor) (`if tensor:`, `while tensor:`)",
    "__int__": "int(tensor)", "__float__": "float(tensor)", "__complex__": "complex(tensor)",
    "__index__": "using a tensor as an index or range bound", "__repr__": "printing a tensor (repr)",
    "__str__": "printing a tensor (str)", "__format__": "formatting a tensor (f-string, print)",
}

_HERE = os.path.dirname(os.path.abspath(__file__))
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


def _user_line() -> str:
    """The innermost frame of the user's code (not torch's, not cstorch's), as 'file:line'."""
    for frame in reversed(traceback.extract_stack()):
        path = os.path.abspath(frame.filename)
        if not path.startswith((_HERE, _TORCH)) and "<frozen" not in path:
            return f" (at {os.path.basename(path)}:{frame.lineno})"
    return ""


def _read_error(operation: str, step: str) -> InvalidState:
    """`step` is how the script named the step ("compile_step function 'train_step'")."""
    return InvalidState(
        f"{operation} inside the {step}{_user_line()}: {READ_RULE}.",
        "Pass the tensor to a function decorated with @cstorch.step_closure and read it there: it runs "
        "after the step, with the value materialized.",
    )


class _ReadGuard(TorchFunctionMode):
    """Refuses the Python-level reads of READS while the step is captured, hands the tensors each
    function makes to the traced-tensor hooks, and makes the tensors the step asks for on R1.8's
    "xla" device where the data is (device.off_xla)."""

    def __init__(self, step: str):
        super().__init__()
        self.step = step
        self.listener = TraceListener()  # the traced-tensor hooks (cstorch.experimental.listener)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", None)
        if name in READS and args and isinstance(args[0], torch.Tensor):
            raise _read_error(READS[name], self.step)
        args, kwargs = off_xla(func, args, kwargs or {})
        result = func(*args, **kwargs)
        self.listener.traced(func, result)
        return result


def _describe(node: fx.Node, t: torch.Tensor) -> None:
    """What the program's passes read of the tensor a node stands for (core/half_precision.py)."""
    node.meta["dtype"], node.meta["ndim"], node.meta["device"] = t.dtype, t.dim(), storage_device(t)


def _key(t: torch.Tensor):
    return (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


class Capture(TorchDispatchMode):
    """Records the aten ops run under it into an FX graph over (inputs, state)."""

    def __init__(self, inputs: list[torch.Tensor], step: str, execute=None):
        super().__init__()
        self.step = step
        # How an op runs while it is recorded: (func, args, kwargs) -> result (core/half_precision.py's
        # capture_executor); PyTorch's own kernel when None.
        self._execute = execute
        self.graph = fx.Graph()
        self._inputs = self.graph.placeholder("inputs")
        self._state = self.graph.placeholder("state")
        self.nodes: dict[int, fx.Node] = {}  # id(tensor) → node, while that tensor lives
        self._by_key: dict[tuple, fx.Node] = {}
        self._by_storage: dict[int, dict[int, fx.Node]] = {}  # storage address → {id: node} viewing it
        # Weak references whose callbacks drop a dead tensor's entries: its id and storage may be
        # reused by a new tensor. (Strong ones would also make autograd copy every gradient it
        # could otherwise hand over, and those copies would be recorded into the program.)
        self._alive: dict[int, weakref.ref] = {}
        self.state: list[torch.Tensor] = []  # persistent tensors, in first-sight order
        self._before: list[torch.Tensor] = []  # their values at first sight
        self.op_count = 0
        self._guard = _ReadGuard(step)
        self._rng = torch.get_rng_state()
        # A model on a CUDA device draws from CUDA's generators: put them back too.
        self._cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        for i, t in enumerate(inputs):
            self._bind(t, self.graph.call_function(operator.getitem, (self._inputs, i)))

    def __enter__(self):
        self._guard.__enter__()
        try:
            return super().__enter__()
        except BaseException:
            self._guard.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            self._guard.__exit__(*exc)

    # -- recording -----------------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is aten._local_scalar_dense.default:
            raise _read_error("Reading a tensor's value (aten._local_scalar_dense)", self.step)
        if func.namespace == "profiler":  # record_function markers (torch.optim's step): no math
            return func(*args, **kwargs)
        op = data_dependent_op(func, args, kwargs)
        if op is not None:  # the static-graph rule (static_shapes.py)
            raise data_dependent_error(op, self.step, _user_line())
        # a class-index loss takes any integer target on the system: the int64 cast is recorded
        args, kwargs = widen_target(func, args, kwargs, self._to_int64)
        flat, spec = tree_flatten((args, kwargs))
        node_args, node_kwargs = spec.unflatten(
            [self.node_for(x) if isinstance(x, torch.Tensor) else x for x in flat])
        out = func(*args, **kwargs) if self._execute is None else self._execute(func, args, kwargs)
        # A constant made in the step (`torch.tensor(0.0)`: lift_fresh returns the constant itself) is
        # a fresh copy on every replay, so updating it in place (`norm += …`) does not carry over.
        target = aten.clone.default if func is aten.lift_fresh.default else func
        node = self.graph.call_function(target, tuple(node_args), node_kwargs)
        self.op_count += 1
        if isinstance(out, torch.Tensor):
            self._bind(out, node)
        elif isinstance(out, (tuple, list)):
            for i, item in enumerate(out):
                if isinstance(item, torch.Tensor):
                    self._bind(item, self.graph.call_function(operator.getitem, (node, i)))
        return out

    def _to_int64(self, t: torch.Tensor) -> torch.Tensor:
        """`t` as int64, the cast recorded as an op of the step (class_targets.py)."""
        return self.__torch_dispatch__(aten._to_copy.default, (), (t,), {"dtype": torch.int64})

    def _bind(self, t: torch.Tensor, node: fx.Node) -> None:
        _describe(node, t)
        self.nodes[id(t)] = node
        key = _key(t) if t.numel() else None
        if key is not None:
            self._by_key[key] = node
            self._by_storage.setdefault(key[0], {})[id(t)] = node
        self._watch(t, node, key)

    def _watch(self, t: torch.Tensor, node: fx.Node, key) -> None:
        tid = id(t)

        def forget(_ref):
            if self.nodes.get(tid) is node:
                del self.nodes[tid]
            if key is not None and self._by_key.get(key) is node:
                del self._by_key[key]
            views = self._by_storage.get(key[0]) if key is not None else None
            if views is not None and views.get(tid) is node:
                del views[tid]
                if not views:
                    del self._by_storage[key[0]]

        self._alive[tid] = weakref.ref(t, forget)

    def node_for(self, t: torch.Tensor) -> fx.Node:
        """The graph's name for `t` (see the module docstring for the order)."""
        node = self.nodes.get(id(t))
        if node is not None:
            return node
        if t.numel():
            node = self._by_key.get(_key(t))
            views = self._by_storage.get(t.untyped_storage().data_ptr())
            if node is None and views:
                base = next(iter(views.values()))
                node = self.graph.call_function(
                    aten.as_strided.default, (base, list(t.shape), list(t.stride()), t.storage_offset()))
                _describe(node, t)
            if node is not None:
                self.nodes[id(t)] = node
                self._watch(t, node, None)
                return node
        node = self.graph.call_function(operator.getitem, (self._state, len(self.state)))
        _describe(node, t)
        self.state.append(t)
        with torch.no_grad():
            self._before.append(t.detach().clone())
        self.nodes[id(t)] = node  # self.state keeps it alive
        return node

    # -- ending --------------------------------------------------------------------------------

    def restore(self) -> list[torch.Tensor]:
        """Put every persistent tensor and the RNG back as they were before the step; return the
        copies of their values (the caller may use them as scratch state)."""
        with torch.no_grad():
            for t, value in reversed(list(zip(self.state, self._before))):
                t.copy_(value)
        torch.set_rng_state(self._rng)
        if self._cuda_rng is not None:
            torch.cuda.set_rng_state_all(self._cuda_rng)
        before, self._before = self._before, []
        self._alive = {}
        return before

    def output(self, tensors: list[torch.Tensor | None]) -> None:
        """End the graph: it returns the nodes of `tensors` (None stays None)."""
        self.graph.output(tuple(None if t is None else self.node_for(t) for t in tensors))
