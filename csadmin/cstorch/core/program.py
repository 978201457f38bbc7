"""The program of a run: the captured step's graph as Python code, what it reads and returns, and
its artifacts (core/compiler.py builds it at the run's first step).

`Program.run(inputs)` executes the graph once on new inputs (no autograd: the backward pass is in
the graph), rebinds the gradients the step left on parameters, and returns the step's result and the
recorded step closures' tensors. What executes is the captured graph lowered by
core/half_precision.py: its half-precision values in float32 carriers, rounded to the run's half
format (float16, bfloat16 or cbfloat16), its arithmetic float32. That graph is FX's generated Python
(one call per aten op), executed with each `torch.ops.aten.<op>.<overload>(...)` bound straight to
the overload's C++ entry (what OpOverload.__call__ forwards to): a Python frame and four attribute
lookups less per op, ~5% of a 5 ms step. Nothing is code-generated below Python.

The compiled artifact's descriptor (what `run.program` gets):
  * fingerprint: sha256 of the program text, its signature and its state's shapes and dtypes
    (the same step compiled again lands in the same compile_dir/cs_<checksum>, like a cache);
  * size_bytes: the persistent state (weights, optimizer state) plus the program text;
  * est_samples_per_sec: batch size / the program's execution time, measured by running the
    compiled program ESTIMATE_RUNS times on copies of the state at compile (in this simulation
    the device is this CPU): on the CPU the sum of each op's shortest time by the executing
    thread's CPU time, on a CUDA device the fastest run by the clock (estimate.py: the same
    program gets the same estimate whatever else the machine runs).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field

import torch
from torch import fx

from csadmin.shared.atomic_write import write_atomically

from .half_precision import emulate
from ..backend.ltc_backend import fetched
from ..amp.formats import FORMATS
from .estimate import program_seconds
from .signature import Signature

ESTIMATE_RUNS = 5


@dataclass
class Program:
    name: str  # the compile_step function's name
    step_fn: object  # the StepFunction that owns it
    module: fx.GraphModule
    signature: Signature
    state: list  # persistent tensors, by identity
    result_spec: object  # how to rebuild the step's return value
    result_leaves: list  # per leaf: ("out", index) or ("const", value)
    grad_params: list  # parameters whose .grad the step rebinds, in output order
    closures: list = field(default_factory=list)  # (fn, spec, leaves) recorded inside the step
    mode: str = "train"
    execmode: str = ""
    op_count: int = 0
    checksum: str = ""
    size_bytes: int = 0
    est_samples_per_sec: float = 0.0
    compile_time: float = 0.0
    directory: str | None = None
    cached: bool = False  # reused compile_dir's artifacts (core/artifacts.py): not compiled again
    half: str = "float16"  # the half format it computes in (amp/formats.py)
    forward: object = None  # the emulated graph's code with its ops bound directly (_direct)
    executable: fx.GraphModule | None = None  # the graph as this runtime runs it (core/half_precision.py)
    fused: object = None  # the executable compiled into fused kernels (core/fused.py), or None: the replay

    @classmethod
    def build(cls, graph: fx.Graph, **fields) -> "Program":
        _simplify(graph)
        module = fx.GraphModule(torch.nn.Module(), graph, class_name="CompiledStep")
        program = cls(module=module, **fields)
        program.executable = fx.GraphModule(torch.nn.Module(), emulate(graph, FORMATS[program.half]),
                                            class_name="CompiledStepEmulated")
        state_bytes = sum(t.numel() * t.element_size() for t in program.state)
        program.size_bytes = state_bytes + len(module.code.encode())
        digest = hashlib.sha256()
        for part in (module.code, program.half, repr(program.signature.leaves), program.mode, program.execmode,
                     repr([(tuple(t.shape), str(t.dtype)) for t in program.state])):
            digest.update(part.encode())
            digest.update(b"\0")
        program.checksum = digest.hexdigest()
        program.forward = _direct(program.executable, program.checksum)
        return program

    @property
    def batch_size(self) -> int:
        return self.signature.batch_size

    def execute(self, inputs: list, state: list | None = None) -> tuple:
        """One execution on `inputs` and the program's state (or `state`: the estimate's copies,
        which the replay runs): the fused program where the compile made one, else the replay."""
        with torch.no_grad():
            if self.fused is not None and state is None:
                return self.fused(*[x.contiguous() for x in inputs], *self.state)
            return self.forward(None, inputs, self.state if state is None else state)

    def estimate(self, inputs: list, scratch_state: list) -> float:
        """Samples per second of this program on its device, from ESTIMATE_RUNS executions on
        `scratch_state` (copies: the real state is not touched), timed as estimate.py says."""
        cuda = any(t.is_cuda for t in (*inputs, *scratch_state))
        rng = torch.get_rng_state()
        cuda_rng = torch.cuda.get_rng_state_all() if cuda else None
        try:
            seconds = program_seconds(self.executable, self.forward, inputs, scratch_state, ESTIMATE_RUNS)
        finally:
            torch.set_rng_state(rng)
            if cuda_rng is not None:
                torch.cuda.set_rng_state_all(cuda_rng)
        self.est_samples_per_sec = round(self.batch_size / max(seconds, 1e-6), 3)
        return self.est_samples_per_sec

    def run(self, inputs: list) -> tuple[object, list]:
        """Execute one step; return (the step's result, its step closures, each a callable that
        fetches that closure's tensors and runs it: call them in order)."""
        # The step makes every gradient it leaves anew: the last step's are let go first, so their
        # memory serves this step's (held both at once, each step's came fresh from the kernel,
        # page-faulted). A gradient the program reads is in its state, which keeps it. A step that
        # fails leaves these gradients None (its run is over: trace.py).
        for p in self.grad_params:
            p.grad = None
        outs = self.execute(inputs)
        n_result = sum(1 for kind, _ in self.result_leaves if kind == "out")
        for p, grad in zip(self.grad_params, outs[n_result:n_result + len(self.grad_params)]):
            p.grad = grad
        result = self.result_spec.unflatten([outs[v] if kind == "out" else v for kind, v in self.result_leaves])
        calls = [functools.partial(_call_closure, fn, spec,
                                   [(kind, outs[v] if kind == "out" else v) for kind, v in leaves])
                 for fn, spec, leaves in self.closures]
        return result, calls

    def descriptor(self, target_system: str) -> dict:
        """What `run.program` takes (csd checks it against the system and the run)."""
        return {
            "fingerprint": f"sha256:{self.checksum}",
            "target_system": target_system,
            "execmode": self.execmode,
            "mode": self.mode,
            "compile_time": round(self.compile_time, 6),
            "est_samples_per_sec": self.est_samples_per_sec,
            "size_bytes": self.size_bytes,
        }

    def write_artifacts(self, compile_dir: str, log: list[str], target_system: str | None) -> str:
        """compile_dir/cs_<checksum>: program.py (what the system runs: the captured graph with its
        half casts; what this runtime runs is core/half_precision.py's lowering of it for
        program.json's half_dtype), graph.txt, program.json, compile.log."""
        directory = os.path.join(compile_dir, f"cs_{self.checksum[:16]}")
        os.makedirs(directory, exist_ok=True)
        info = {
            "step": self.name, "mode": self.mode, "half_dtype": self.half, "execmode": self.execmode, "ops": self.op_count,
            "batch_size": self.batch_size, "state_tensors": len(self.state),
            "signature": [list(map(str, leaf)) for leaf in self.signature.leaves],
            "descriptor": self.descriptor(target_system or "(not checked)"),
        }
        files = {
            "program.py": self.module.code,
            "graph.txt": str(self.module.graph),
            "program.json": json.dumps(info, indent=2) + "\n",
            "compile.log": "".join(line + "\n" for line in log),
        }
        for name, text in files.items():
            write_atomically(os.path.join(directory, name), text)
        self.directory = directory
        return directory


def _simplify(graph: fx.Graph) -> None:
    """Drop what only autograd needed: `detach` (an alias without history; the program runs
    without autograd, so the alias itself serves) and ops whose results nothing uses. FX keeps
    every op that mutates (its schema says so) or draws random numbers."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten.detach.default:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
    graph.eliminate_dead_code()


_OP_CALL = re.compile(r"\btorch\.ops\.(\w+)\.(\w+)\.(\w+)\(")


def _direct(module: fx.GraphModule, checksum: str):
    """FX's `forward(self, inputs, state)` source, compiled again with every op call bound to a
    global holding the overload's C++ entry (see the module docstring)."""
    namespace = dict(module.forward.__func__.__globals__)  # FX's own globals (inf, nan, device, ...)
    names: dict[tuple, str] = {}

    def bind(match: re.Match) -> str:
        key = match.groups()
        if key not in names:
            names[key] = f"_op{len(names)}"
            overload = getattr(getattr(getattr(torch.ops, key[0]), key[1]), key[2])
            namespace[names[key]] = overload._op
        return names[key] + "("

    source = _OP_CALL.sub(bind, module.code)
    exec(compile(source, f"<cstorch program {checksum[:16]}>", "exec"), namespace)
    return namespace["forward"]


def _call_closure(fn, spec, leaves: list) -> None:
    """Run one step closure, its tensors fetched just before it runs, as the system fetches each
    closure's when it runs that closure: a fetch hook (ModelZoo's DurationProfiler times batches
    by them) sees the tensors of the closures before this one, not of those after."""
    name = getattr(fn, "__name__", "closure")
    args, kwargs = spec.unflatten([fetched(value, f"{name}.{i}") if kind == "out" else value
                                   for i, (kind, value) in enumerate(leaves)])
    fn(*args, **kwargs)
