"""The compile of a program into fused kernels: PyTorch's Inductor (C++/OpenMP code for the CPU,
built with the machine's C++ compiler) on the lowered graph core/half_precision.py makes, with the
half-precision roundings fused into the kernels that produce the values.

Values are the replay's, bit for bit (the numerics contract's, docs/cstorch/numerics.md). Inductor
generates its own code for an op only where that code computes what PyTorch's CPU kernel computes:
the roundings, the exact arithmetic of IEEE float32 (+ − × ÷, negation, comparisons, selections,
casts, moves: EXACT below) and every view. Every other op — matrix products, reductions, softmax,
losses, transcendental functions, random draws, and `lerp`/`addcmul`/`sqrt`, whose CPU kernels
round differently from Inductor's code (fused multiply-adds) — is called as PyTorch's own kernel
from the fused program (an opaque op, `_opaque`; an in-place one stays in place), where Inductor
cannot re-derive it. Inductor's options pin the rest: casts kept (`emulate_precision_casts`: a
rounding to float16 and back is not elided), random ops PyTorch's (`fallback_random`), no
joint-graph constant folding (it folded a rounded constant gradient without its rounding), no
floating-point contraction or reassociation (Inductor's defaults, `-ffp-contract=off
-fno-unsafe-math-optimizations`).

`compile_program(executable, inputs, state, cache_dir)` returns the compiled step (a function of the flat
inputs and state tensors) or raises `NotFused` naming why (no C++ compiler, an op it cannot take,
Inductor's own error). Inductor's caches (its FX graph and AOT autograd caches, the built
kernels) live in `cache_dir` (the program's compile directory): the same program compiled again
reuses them. `CSTORCH_FUSE=0` turns the compiler off (the replay runs); `CSTORCH_FUSE=1` on.
"""

from __future__ import annotations

import contextlib
import operator
import os
import shutil

import torch
from torch import fx

from ..amp import formats

aten = torch.ops.aten

ENV = "CSTORCH_FUSE"  # "0": the replay; "1": the compiled program (DEFAULT when unset)
DEFAULT = "0"

# Ops whose Inductor code is PyTorch's CPU kernel bit for bit: exact IEEE arithmetic, selections
# and moves (tests/cstorch/core/test_fused.py and the numerics tests run against them).
EXACT = {
    getattr(getattr(aten, name), overload)
    for name in ("add", "add_", "sub", "sub_", "rsub", "mul", "mul_", "div", "div_", "neg", "abs", "relu",
                 "relu_", "threshold_backward", "where", "clone", "copy_", "_to_copy", "alias", "ones_like",
                 "zeros_like", "full_like", "fill_", "zero_", "maximum", "minimum", "eq", "ne", "lt", "le", "gt",
                 "ge", "reciprocal", "pow", "masked_fill", "logical_not", "logical_and", "logical_or",
                 "_unsafe_view")  # a reshape whose schema declares no alias: a move, Inductor's view
    for overload in ("Tensor", "Scalar", "default", "out", "self", "Tensor_Scalar", "Scalar_Tensor", "Tensor_Tensor")
    if hasattr(getattr(aten, name), overload)
}


class NotFused(Exception):
    """The program cannot be compiled here (the message says why); the replay runs it."""


def enabled() -> bool:
    """Whether this process compiles programs ($CSTORCH_FUSE, DEFAULT when unset)."""
    return os.environ.get(ENV, DEFAULT).strip() not in ("0", "", "off", "false", "no")


class _Opaque:
    """PyTorch's own kernels as ops Inductor calls but does not generate: one `cstorch_fused::<op>`
    per aten overload, its schema the overload's, its implementation the overload itself."""

    def __init__(self):
        self.library = None
        self.ops: dict = {}

    def __call__(self, overload):
        """The opaque op of `overload`; an in-place one's returns nothing (Inductor functionalizes
        it and, where nothing else reads the old value, calls it in place again)."""
        if overload not in self.ops:
            if self.library is None:
                self.library = torch.library.Library("cstorch_fused", "FRAGMENT")
            schema = overload._schema
            name = f"{schema.name.split('::')[1]}_{schema.overload_name or 'default'}".replace("__", "_inplace_")
            if not hasattr(torch.ops.cstorch_fused, name):
                text = str(schema)
                arguments = text[text.index("("):text.rindex(" -> ")]
                returns = "()" if schema.is_mutable else text[text.rindex(" -> ") + 4:]
                self.library.define(f"{name}{arguments} -> {returns}")
                self.library.impl(name, _call(overload, schema.is_mutable), "CompositeExplicitAutograd")
            self.ops[overload] = getattr(torch.ops.cstorch_fused, name).default
        return self.ops[overload]


def _call(overload, mutates: bool):
    """The opaque op's implementation: the overload's C++ entry itself (what OpOverload.__call__
    forwards to), so each of the ~280 opaque calls of a gigaGPT step costs no Python frame of
    ours beyond the in-place wrapper, which must return nothing (the opaque schema's `()`)."""
    op = overload._op
    if mutates:
        def run_in_place(*args, **kwargs):
            op(*args, **kwargs)
        return run_in_place
    return op


_opaque = _Opaque()


def _cb16(x: torch.Tensor) -> torch.Tensor:
    """formats.round_cbfloat16 as one expression over the whole tensor (no pieces), for Inductor
    to fuse: the same float32 operations in the same order."""
    x = x.to(torch.float32)
    magic = torch.bitwise_and(x.view(torch.int32), formats._EXP_FIELD).clamp(formats._CB16_LOW, formats._CB16_HIGH)
    magic = (magic + formats._MAGIC).view(torch.float32)
    y = (x + magic) - magic
    return torch.copysign((y * formats._PAST_RANGE) * (1.0 / formats._PAST_RANGE), x)


# Each format's roundings, as the fused graph computes them (one expression, fusable).
_ROUNDINGS = {
    formats.round_float16: lambda x: x.to(torch.float16).to(torch.float32),
    formats.round_float16_: lambda x: x.copy_(x.to(torch.float16)),
    formats.round_bfloat16: lambda x: x.to(torch.bfloat16).to(torch.float32),
    formats.round_bfloat16_: lambda x: x.copy_(x.to(torch.bfloat16)),
    formats.round_cbfloat16: _cb16,
    formats.round_cbfloat16_: lambda x: x.copy_(_cb16(x)),
}


def _aliases(overload) -> bool:
    schema = overload._schema
    return any(r.alias_info is not None for r in schema.returns) and not schema.is_mutable


def _written(overload) -> list:
    return [a.name for a in overload._schema.arguments if a.alias_info is not None and a.alias_info.is_write]


def _written_node(node: fx.Node):
    """The tensor (node) an in-place op node writes, followed back through earlier in-place ops to
    the tensor they all write (None when `node` writes nothing or several)."""
    while node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload) \
            and len(_written(node.target)) == 1:
        bound = dict(zip((a.name for a in node.target._schema.arguments), node.args)) | dict(node.kwargs)
        written = bound[_written(node.target)[0]]
        if not isinstance(written, fx.Node):
            return None
        node = written
    return node if node.op != "output" else None


def _shared_in_place(graph: fx.Graph) -> set:
    """In-place ops Inductor could compute (EXACT) on a tensor an opaque op also writes in place
    (AdamW's `mul_` before `addcmul_` on its second moment): they run as PyTorch's in-place
    kernels too, for Inductor would compute them into a new buffer and copy it back."""
    opaque_roots = {_written_node(n) for n in graph.nodes if n.op == "call_function"
                    and isinstance(n.target, torch._ops.OpOverload) and n.target._schema.is_mutable
                    and n.target not in EXACT}
    opaque_roots.discard(None)
    return {n for n in graph.nodes if n.op == "call_function" and n.target in EXACT
            and n.target._schema.is_mutable and _written_node(n) in opaque_roots}


def _scalar_overload(target, node: fx.Node):
    """`mul_.Tensor(x, 0.9)` as `mul_.Scalar`: a Python number where the schema says Tensor is
    wrapped by PyTorch's argument parser, which an op of ours does not have."""
    numbers = [isinstance(v, (int, float)) and str(a.type) == "Tensor"
               for a, v in zip(target._schema.arguments, node.args)]
    if any(numbers) and target._overloadname == "Tensor":
        packet = getattr(aten, target._schema.name.split("::")[1])
        if "Scalar" in packet.overloads():
            return packet.Scalar
    return target


def _node(graph: fx.Graph, node: fx.Node, env: dict, in_place: bool = False) -> fx.Node:
    """`node` copied into `graph`: a rounding fusable, an op Inductor would compute differently
    (or `in_place`: see _shared_in_place) made opaque (an in-place one returns nothing: the tensor
    it wrote stands for its result)."""
    new = graph.node_copy(node, lambda n: env[n])
    target = new.target
    if new.op != "call_function":
        return new
    if target in _ROUNDINGS:
        new.target = _ROUNDINGS[target]
        return new
    if not in_place and (not isinstance(target, torch._ops.OpOverload) or target in EXACT or _aliases(target)):
        return new
    target = _scalar_overload(target, new)
    if target._schema.is_mutable:  # PyTorch's in-place kernel; what it wrote stands for its result
        if len(_written(target)) != 1:
            raise NotFused(f"the step's op {target} writes {len(_written(target))} tensors (the compiler takes one)")
        new.target = _opaque(target)
        bound = dict(zip((a.name for a in target._schema.arguments), new.args)) | dict(new.kwargs)
        return bound[_written(target)[0]]
    new.target = _opaque(target)
    return new


def flat_module(executable: fx.GraphModule, n_inputs: int, n_state: int) -> fx.GraphModule:
    """The program's graph (`forward(self, inputs, state)`) as a function of its flat tensors
    (inputs, then state), made ready for Inductor by `_node`."""
    graph = fx.Graph()
    lists = {"inputs": [graph.placeholder(f"input{i}") for i in range(n_inputs)],
             "state": [graph.placeholder(f"state{k}") for k in range(n_state)]}
    env: dict = {}
    by_node: dict = {}
    in_place = _shared_in_place(executable.graph)
    for node in executable.graph.nodes:
        if node.op == "placeholder":
            by_node[node] = lists[node.target]
        elif node.op == "call_function" and node.target is operator.getitem and node.args[0] in by_node:
            env[node] = by_node[node.args[0]][node.args[1]]
        else:
            env[node] = _node(graph, node, env, node in in_place)
    return fx.GraphModule(torch.nn.Module(), graph, class_name="FusedStep")


def _compiler() -> str:
    """The C++ compiler Inductor will call; NotFused when there is none."""
    name = os.environ.get("CXX") or "g++"
    if shutil.which(name) is None:
        raise NotFused(f"no C++ compiler ({name!r} is not on PATH; set CXX or install g++)")
    return name


@contextlib.contextmanager
def _inductor_cache(directory: str):
    """Inductor's caches in `directory` for the compile (its cache_dir() reads the environment)."""
    saved = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.abspath(directory)
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = saved


def compile_program(executable: fx.GraphModule, inputs: list, state: list, cache_dir: str):
    """The compiled step: `run(*inputs, *state)` → the program's outputs (the state updated in
    place, as the replay does). Raises NotFused naming why it cannot."""
    if any(t.device.type != "cpu" for t in (*inputs, *state)):
        raise NotFused("the program's tensors are not on the CPU (the compiler here generates CPU code only)")
    _compiler()
    module = flat_module(executable, len(inputs), len(state))
    from torch._guards import TracingContext, tracing
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    options = {"emulate_precision_casts": True, "fallback_random": True, "compile_threads": 1,
               "joint_graph_constant_folding": False, "size_asserts": False, "alignment_asserts": False,
               "fx_graph_cache": True, "autotune_local_cache": False}
    examples = [t.contiguous() for t in inputs] + list(state)
    try:
        # A tracing context with a shape environment, as Dynamo gives Inductor: its FX graph and AOT
        # autograd caches are keyed by it (without one they are bypassed).
        context = TracingContext(FakeTensorMode(shape_env=ShapeEnv()))
        with _inductor_cache(cache_dir), inductor_config.patch(options), torch.no_grad(), tracing(context):
            return compile_fx(module, examples)
    except NotFused:
        raise
    except Exception as error:  # Inductor's own failure, whatever its type: the replay runs instead
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise NotFused(f"Inductor could not compile it ({type(error).__name__}: {first[:300]})") from error
