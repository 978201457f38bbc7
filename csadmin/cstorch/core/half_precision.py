"""Half precision emulated, not executed: a captured program lowered to float32 arithmetic on
half-rounded values.

The captured program (capture.py) is what the system runs: autocast's casts to the half proxy
dtype (float16 for float16 and cbfloat16, bfloat16 for bfloat16) and the ops between them in
that dtype. `emulate(graph, fmt)` returns the program this runtime executes instead, with the
same numerics and float32 speed:

  * every value the system holds in half precision is a float32 tensor (a *carrier*) holding a
    value of the format, rounded to it (amp/formats.py) where it is made;
  * an op on half values computes, and accumulates, in float32 on the carriers, and its half
    result is rounded to the format: for an elementwise op that is what PyTorch's own half kernel
    on a CPU does where it computes in float32 and rounds once (most do: docs/cstorch.md names
    the exceptions), so the numbers are eager autocast's bit for bit; for a matrix product or a
    reduction it is the system's FP16 units with FP32 accumulators (half-rounded inputs and
    output, float32 sums), which eager PyTorch matches to within the float32 rounding of its own
    summation order;
  * a number in an add, a subtraction, a remainder or a comparison on half values enters rounded
    to the format (SCALARS_IN_HALF: as PyTorch's half kernels take it);
  * a cast to the half dtype rounds; an op that only moves, selects or views values (EXACT, and
    every view) does not need to; an op that writes a half tensor in place is followed by an
    in-place rounding of it;
  * a step input of the half dtype enters rounded; a half value the step returns (or hands a step
    closure) leaves as `fmt.visible` (float16 / bfloat16 exactly; CB16 in its float32 carrier).

Persistent tensors (the state) of the half dtype are read, rounded, but may not be written in
place: their carrier is not them, and the system keeps persistent state in float32 (001).

`capture_executor(fmt)` gives the capture the same arithmetic for the ops that cost the most in
a half dtype on a CPU without half arithmetic (matrix products and convolutions), so that the one
eager execution capturing the step takes float32 time, and its results are the program's.
"""

from __future__ import annotations

import operator

import torch
from torch import fx
from torch.utils._pytree import tree_flatten, tree_map

from csadmin.errors import InvalidArgument

from ..amp.formats import HalfFormat

aten = torch.ops.aten

# Ops whose half result is a value they were given (or zero): moved, selected or compared, never
# computed. Rounding it again would change nothing, so it is skipped. Every view is exact too.
EXACT = {
    aten.clone.default, aten.relu.default, aten.threshold_backward.default, aten.neg.default, aten.abs.default,
    aten.cat.default, aten.stack.default, aten.index_select.default, aten.gather.default, aten.index.Tensor,
    aten.max.dim, aten.min.dim, aten.max.default, aten.min.default, aten.amax.default, aten.amin.default,
    aten.maximum.default, aten.minimum.default, aten.zeros_like.default, aten.empty_like.default,
    aten.zeros.default, aten.empty.memory_format, aten.new_zeros.default, aten.new_empty.default,
    aten.new_empty_strided.default, aten.empty_strided.default, aten.select_backward.default,
    aten.slice_backward.default, aten.contiguous.default, aten.flip.default, aten.roll.default,
    aten.repeat.default, aten.permute.default, aten._to_copy.default,
    aten.zero_.default, aten.relu_.default, aten.copy_.default,  # in place: exact when the source is half
}

# Ops whose PyTorch kernel takes its numbers (a Python float, alpha, a 0-d float32 tensor) rounded
# to the half dtype when it computes in it, where others (mul, div, lerp, addcmul, …) take them in
# float32 (tests/cstorch/core/test_half_precision.py compares each with eager PyTorch).
SCALARS_IN_HALF = {
    getattr(getattr(aten, name), overload)
    for name in ("add", "sub", "rsub", "add_", "sub_", "fmod", "remainder", "eq", "ne", "lt", "le", "gt", "ge")
    for overload in ("Tensor", "Scalar") if hasattr(getattr(aten, name), overload)
}

# The ops the capture computes as the program does (see the module docstring): each returns
# half tensors (or None) only.
_CAPTURE_IN_FLOAT32 = {
    aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default, aten.addbmm.default,
    aten.mv.default, aten.addmv.default, aten.dot.default, aten.convolution.default,
    aten.convolution_backward.default,
}


def _is_view(target) -> bool:
    returns = target._schema.returns
    return bool(returns) and returns[0].alias_info is not None and not target._schema.is_mutable


def _written(target, node: fx.Node) -> list:
    """The nodes `node` (a call of `target`) writes in place."""
    schema = target._schema
    if not schema.is_mutable:
        return []
    bound = dict(zip((a.name for a in schema.arguments), node.args)) | dict(node.kwargs)
    found = []
    for arg in schema.arguments:
        if arg.alias_info is not None and arg.alias_info.is_write:
            flat, _ = tree_flatten(bound.get(arg.name))
            found.extend(x for x in flat if isinstance(x, fx.Node))
    return found


def _tensor_nodes(node: fx.Node) -> list:
    flat, _ = tree_flatten((node.args, node.kwargs))
    return [x for x in flat if isinstance(x, fx.Node) and "dtype" in x.meta]


class _Lowering:
    """One pass over a copy of the captured graph (see `emulate`)."""

    def __init__(self, graph: fx.Graph, fmt: HalfFormat):
        self.fmt = fmt
        self.half = fmt.proxy
        self.graph = fx.Graph()
        self.graph.output(self.graph.graph_copy(graph, {}))
        self.rounds_outputs: set = set()  # multi-output nodes whose half outputs need rounding
        self.from_state: set = set()  # carriers of half persistent tensors or step inputs, and their views

    def dtype(self, node) -> torch.dtype | None:
        return node.meta.get("dtype") if isinstance(node, fx.Node) else None

    def run(self) -> fx.Graph:
        for node in list(self.graph.nodes):
            if node.op == "call_function" and node.target is operator.getitem:
                self.getitem(node)
            elif node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                self.op(node)
            elif node.op == "output":
                self.output(node)
        self.graph.lint()
        return self.graph

    def after(self, node: fx.Node, fn, *args) -> fx.Node:
        """Insert `fn(node, *args)` right after `node` and make every later use of `node` use it."""
        with self.graph.inserting_after(node):
            new = self.graph.call_function(fn, (node, *args))
        new.meta["dtype"] = node.meta["dtype"]  # the value's dtype in the program (its carrier's is float32)
        node.replace_all_uses_with(new, delete_user_cb=lambda user: user is not new)
        return new

    def getitem(self, node: fx.Node) -> None:
        source = node.args[0]
        if self.dtype(node) != self.half:
            return
        if source.op == "placeholder":
            # A half step input or persistent tensor: its carrier, rounded (exact for float16 and
            # bfloat16; a float16 value may need CB16's rounding).
            carrier = self.after(node, self.fmt.round)
            self.from_state.add(carrier)
        elif source in self.rounds_outputs:
            self.after(node, self.fmt.round_)

    def op(self, node: fx.Node) -> None:
        target = node.target
        half = self.half
        inputs = _tensor_nodes(node)
        flat, _ = tree_flatten((node.args, node.kwargs))
        names_half = any(x is half for x in flat)
        if not names_half and self.dtype(node) != half and all(self.dtype(x) != half for x in inputs):
            return
        if target is aten.view.dtype:
            raise InvalidArgument(
                f"The step reinterprets the bits of a {half} tensor (Tensor.view(dtype)): the half values "
                f"of a compiled step are computed in float32 here, so their bits are not {half}'s.",
                hint="Compare or store the values instead of their bit patterns.")
        written = _written(target, node)
        if any(w in self.from_state for w in written):
            raise InvalidArgument(
                f"The step writes a {half} persistent tensor or step input in place ({target}): the "
                f"system keeps persistent state in float32 (001) and computes the half values of a step "
                f"from it.", hint="Keep the tensor in float32 (.float()); the casts are inserted for you.")
        if names_half:  # dtype=<half>: the carrier's dtype instead
            node.args, node.kwargs = tree_map(lambda x: torch.float32 if x is half else x, (node.args, node.kwargs))
        if _is_view(target):
            if any(x in self.from_state for x in inputs):
                self.from_state.add(node)
            return
        if target is aten._to_copy.default and self.dtype(node) == half and set(node.kwargs) == {"dtype"} \
                and self.dtype(node.args[0]) != half:
            # autocast's cast to the half dtype: a rounding (one pass, not a copy and a rounding).
            node.target, node.args, node.kwargs = self.fmt.round, (node.args[0],), {}
            return
        if self._widening_own_carrier(node):
            # The cast back to float32 of a half value nothing else uses (a weight gradient): its
            # carrier already is that float32 tensor, so it is the result (an alias, no copy).
            node.target, node.args, node.kwargs = aten.alias.default, (node.args[0],), {}
            return
        writes = [w for w in written if self.dtype(w) == half]
        if target in SCALARS_IN_HALF and self._computes_in_half(inputs):
            self._round_scalars(node)
        if self._exact(node, [x for x in inputs if x not in writes]):
            return
        for w in writes:  # written in place: rounded in place after it
            with self.graph.inserting_after(node):
                rounded = self.graph.call_function(self.fmt.round_, (w,))
            rounded.meta["dtype"] = half
            node.replace_all_uses_with(rounded, delete_user_cb=lambda user, r=rounded: user is not r)
        if writes:
            return
        if self.dtype(node) == half:
            self.after(node, self.fmt.round_)
        elif "dtype" not in node.meta:  # several outputs: round the half ones where they are taken
            self.rounds_outputs.add(node)

    def _widening_own_carrier(self, node: fx.Node) -> bool:
        """Whether `node` casts a half value to float32 on its own device, and that value — a new
        result of an op, or views of one — is used by this cast alone, so the carrier may serve as
        the cast's result."""
        source = node.args[0]
        if node.target is not aten._to_copy.default or self.dtype(node) != torch.float32 \
                or self.dtype(source) != self.half or len(node.args) != 1:
            return False
        device = node.kwargs.get("device", source.meta.get("device"))
        if set(node.kwargs) - {"dtype", "layout", "device"} or node.kwargs.get("layout", torch.strided) != torch.strided \
                or device != source.meta.get("device"):
            return False
        while len(source.users) == 1 and source.op == "call_function":
            if source.target is self.fmt.round_ or (isinstance(source.target, torch._ops.OpOverload)
                                                    and _is_view(source.target)):
                source = source.args[0]  # the same tensor, or a view of it: look at what it is of
                continue
            return source.target is self.fmt.round or (isinstance(source.target, torch._ops.OpOverload)
                                                       and not source.target._schema.is_mutable)
        return False

    def _computes_in_half(self, inputs: list) -> bool:
        """Whether an elementwise op on `inputs` computes in the half dtype by PyTorch's type
        promotion: a half tensor among them, and every other floating one that has dimensions half
        too (a 0-d one does not count against it)."""
        floating = [x for x in inputs if self.dtype(x).is_floating_point]
        return any(self.dtype(x) == self.half for x in floating) and all(
            self.dtype(x) == self.half for x in floating if x.meta.get("ndim", 1) > 0)

    def _round_scalars(self, node: fx.Node) -> None:
        """The op's numbers (a Python float, a 0-d float32 tensor: its only float inputs that are
        not half) enter it rounded to the format, as PyTorch's half kernel takes them."""
        round_number = self.fmt.round

        def rounded(x):
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                value = float(round_number(torch.tensor(x, dtype=torch.float64)))
                return x if value == x else value
            if isinstance(x, fx.Node) and self.dtype(x) is not None and self.dtype(x).is_floating_point \
                    and self.dtype(x) != self.half:
                with self.graph.inserting_before(node):
                    new = self.graph.call_function(round_number, (x,))
                new.meta["dtype"] = self.half
                return new
            return x

        node.args, node.kwargs = tree_map(rounded, (node.args, node.kwargs))

    def _exact(self, node: fx.Node, inputs: list) -> bool:
        """Whether `node`'s half result is exactly a half value it was given (no rounding needed)."""
        if node.target not in EXACT and not _is_view(node.target):
            return False
        floating = [x for x in inputs if self.dtype(x) is not None and self.dtype(x).is_floating_point]
        return all(self.dtype(x) == self.half for x in floating)

    def output(self, node: fx.Node) -> None:
        """Half values leave the program as the user sees them (`fmt.visible`)."""
        visible = self.fmt.visible

        def leave(x):
            if isinstance(x, fx.Node) and self.dtype(x) == self.half and visible != torch.float32:
                with self.graph.inserting_before(node):
                    return self.graph.call_method("to", (x, visible))
            return x

        node.args = tree_map(leave, node.args)


def emulate(graph: fx.Graph, fmt: HalfFormat) -> fx.Graph:
    """A new graph computing `graph` (captured, every tensor node's `meta["dtype"]` set) with its
    half values in float32 carriers of `fmt` (see the module docstring). `graph` is unchanged."""
    return _Lowering(graph, fmt).run()


def capture_executor(fmt: HalfFormat):
    """How the capture executes an op: matrix products and convolutions on half tensors in float32
    on their values, the result rounded to `fmt` and given back in the half dtype; every other op as
    PyTorch does."""
    half = fmt.proxy

    def execute(func, args, kwargs):
        if func not in _CAPTURE_IN_FLOAT32:
            return func(*args, **kwargs)
        flat, _ = tree_flatten((args, kwargs))
        if not any(isinstance(x, torch.Tensor) and x.dtype == half for x in flat):
            return func(*args, **kwargs)
        wide_args, wide_kwargs = tree_map(
            lambda x: x.float() if isinstance(x, torch.Tensor) and x.dtype == half else x, (args, kwargs))
        out = func(*wide_args, **wide_kwargs)
        return tree_map(lambda x: fmt.round(x).to(half) if isinstance(x, torch.Tensor) else x, out)

    return execute
