"""The compile of a run's step: its first call captured as one static program, built, and its
artifacts reused or made. `compile_program` is the one entry; core/trace.py calls it at a run's
first step, and then opens the run on csd itself (this module never contacts csd).

  1. capture (`_capture`): with core torch.optim optimizers refused inside it (optim/core_guard.py),
     the step function runs once under a Capture (core/capture.py) —
     forward, loss, backward, optimizer and scheduler steps as one aten graph — under autocast
     to the run's half format; its result, the gradients it computed and the step closures it
     called become the graph's outputs. The state, the gradients and the RNG are put back after.
  2. mode: the program's ("train" when the step computes a gradient or updates a parameter),
     which what the script said must agree with (core/compile.py's `run_mode`).
  3. program: `Program.build` (core/program.py) lowers, fingerprints and sizes the graph.
  4. artifacts or estimate: compile_dir's artifacts of this same program for this system are
     reused (core/artifacts.py); otherwise the program is executed on copies of the state for its
     estimate (core/estimate.py) and its artifacts (the program, compile.log, program.json) are
     written. validate_only does neither.
  5. report: the compile log (what the artifacts' compile.log says), the "compile cached" line on
     stderr, the compile record a launcher asked for, and under compile_only / validate_only
     their yaml (compile_only) and the summary on stdout (`_only_summary`).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten

from ..amp.precision import half_format, step_autocast
from .artifacts import lookup as lookup_artifacts, record as record_compile
from .capture import Capture
from . import fused
from .compile import run_mode
from .half_precision import capture_executor
from .model_dir import link_compile_dir, write_params
from ..optim import core_guard
from .program import ESTIMATE_RUNS, Program
from .retrace import ops as traced_ops
from .signature import Signature


@dataclass
class _Captured:
    """What the capture of the first step yields, for building its program."""
    cap: Capture  # its graph, its persistent state, its op count
    result: object  # the step's return value, computed as it was captured
    result_spec: object
    result_leaves: list
    grad_params: list  # parameters whose .grad the step rebinds, in output order
    closures: list  # (fn, spec, leaves) of the step closures called inside the step
    trains: bool  # a gradient computed or a parameter updated in place
    scratch: list  # copies of the state as it was before the step (for the estimate)
    seconds: float  # the capture's time


@dataclass
class Compiled:
    """A compiled step: its program, the first step's result and flat input tensors."""
    program: Program
    result: object
    inputs: list


def _leaves(value, outputs: list) -> tuple[object, list]:
    """Flatten `value`; its tensors join `outputs`. Returns (spec, [("out", i) | ("const", v)])."""
    flat, spec = tree_flatten(value)
    leaves = []
    for x in flat:
        if isinstance(x, torch.Tensor):
            leaves.append(("out", len(outputs)))
            outputs.append(x)
        else:
            leaves.append(("const", x))
    return spec, leaves


def _capture(step_fn, backend, run, inputs: list, args: tuple, kwargs: dict, half, start: float) -> _Captured:
    """Run the step function once under a Capture; put the state and the gradients back after.
    Its `seconds` count from `start`, the compile's start."""
    params = backend.parameters()
    grads_before = [p.grad for p in params]
    versions = [p._version for p in params]  # an in-place update bumps it: the step trains them
    cap = Capture(inputs, step_fn.described, execute=capture_executor(half))
    run.capture, run.captured_closures = cap, []
    try:
        # 001: the system computes in half precision with the casts inserted for it, so the
        # step runs under autocast (for each device the model lives on) and the program holds
        # its casts (a user's own autocast inside is the same context again). The weight
        # update stays float32: optimizers' elementwise ops are not among the ops autocast casts.
        with backend.stepping(), cap, step_autocast([*params, *inputs]):
            result = step_fn.fn(*args, **kwargs)
        run.traced_ops = traced_ops(cap.graph)
        outputs: list = []
        result_spec, result_leaves = _leaves(result, outputs)
        grad_params = [p for p, g in zip(params, grads_before) if p.grad is not g]
        # a gradient computed (not one only cleared: zero_grad) or a parameter updated in place
        trains = any(p.grad is not None for p in grad_params) or any(
            p._version != v for p, v in zip(params, versions))
        outputs += [p.grad for p in grad_params]
        closures = []
        for fn, a, kw in run.captured_closures:
            spec, leaves = _leaves((a, kw), outputs)
            closures.append((fn, spec, leaves))
        cap.output(outputs)
        seconds = time.perf_counter() - start
    finally:
        run.capture = None
        scratch = cap.restore()
        for p, g in zip(params, grads_before):
            p.grad = g
    return _Captured(cap, result, result_spec, result_leaves, grad_params, closures, trains, scratch, seconds)


def _build(step_fn, backend, captured: _Captured, signature: Signature, half) -> Program:
    """The captured graph as the run's program, in the mode the step and the script say."""
    mode = run_mode(backend.models, captured.trains, step_fn.name)
    cap = captured.cap
    return Program.build(
        cap.graph, name=step_fn.name, step_fn=step_fn, signature=signature, state=cap.state,
        result_spec=captured.result_spec, result_leaves=captured.result_leaves, grad_params=captured.grad_params,
        closures=captured.closures, mode=mode, execmode=backend.execmode, op_count=cap.op_count, half=half.name)


def _capture_log(program: Program, captured: _Captured, half) -> list[str]:
    return [f"step {program.name!r}: captured {program.op_count} aten ops, {len(program.state)} persistent tensors, "
            f"batch size {program.batch_size}, mode {program.mode}, in {captured.seconds:.3f} s",
            f"mixed precision: float32 weights, {half.name} compute (casts inserted by autocast), float32 "
            f"weight update; executed here as float32 arithmetic on {half.name}-rounded values "
            f"(core/half_precision.py)"]


def _reuse_or_estimate(program: Program, config, serial: str | None, inputs: list, scratch: list, log: list):
    """compile_dir's artifacts of this program for this system (then the program is marked
    cached), else the estimate, logged; validate_only: neither. Returns the artifacts or None."""
    if config.validate_only:
        return None
    # Artifacts of this very program for this system: reuse them; for another: refused.
    cached = lookup_artifacts(config.compile_dir, program.checksum, serial)
    if cached is not None:
        program.est_samples_per_sec, program.directory = cached.est_samples_per_sec, cached.directory
        program.cached = True
        return cached
    program.estimate(inputs, scratch)
    log.append(f"estimated {program.est_samples_per_sec:g} samples/s ({ESTIMATE_RUNS} executions on copies of "
               f"the state: each op's shortest time by the executing thread's CPU time, summed; core/estimate.py)")
    return None


def _fuse(program: Program, config, inputs: list, log: list) -> None:
    """Compile the program into fused kernels (core/fused.py), Inductor's artifacts in its compile
    directory (reused when the same program compiles again); where it cannot, say why once and
    leave the replay. $CSTORCH_FUSE=0: the replay, as the log says."""
    if not fused.enabled():
        log.append(f"not fused (${fused.ENV}=0): the step runs as the replay, op by op")
        return
    start = time.perf_counter()
    directory = os.path.join(config.compile_dir, f"cs_{program.checksum[:16]}", "inductor")
    try:
        program.fused = fused.compile_program(program.executable, inputs, program.state, directory)
    except fused.NotFused as why:
        note = f"not fused: {why}; the step runs as the replay, op by op (core/fused.py)"
        print(f"cstorch: {note}", file=sys.stderr, flush=True)
        log.append(note)
        return
    log.append(f"fused by Inductor (C++) in {time.perf_counter() - start:.3f} s: the roundings inside the kernels "
               f"that make the values, {directory} (core/fused.py)")


def _report(backend, config, program: Program, cached, serial: str | None, log: list) -> None:
    """The compile log written with new artifacts (or the cached line on stderr), the model
    directory's link to them, and the launchers' compile record."""
    if backend.executor_required:
        log.append(f"backends.csx: {backend.csx.settings()} (recorded: the numerics here are PyTorch's)")
    if cached is not None:
        # compile_time is then what this process spent: the capture and the lookup, and with the
        # compiler on, loading the fused kernels through Inductor's caches (core/fused.py).
        spent = "the capture, the lookup and the fused kernels from Inductor's cache" if program.fused is not None \
            else "the capture and the lookup only"
        print(f"cstorch: compile cached: reusing {cached.directory} (compiled for {cached.target_system}); "
              f"compile_time {program.compile_time:.3f} s is {spent}", file=sys.stderr)
    else:
        log.append(f"compile_time {program.compile_time:.3f} s; size {program.size_bytes} bytes")
    if not config.validate_only and cached is None:
        program.write_artifacts(config.compile_dir, log, serial)
    if not config.validate_only:
        link_compile_dir(backend.run_dir(), program)
    record_compile(config, program, serial, cached is not None)


def compile_program(step_fn, backend, config, run, args: tuple, kwargs: dict) -> Compiled:
    """Compile the step `step_fn` called with these arguments (see the module docstring); under
    compile_only / validate_only also write their yaml and print their summary."""
    core_guard.install(backend)  # a core torch.optim optimizer may not step inside the step
    start = time.perf_counter()
    signature, inputs = Signature.of(args, kwargs)
    half = half_format()
    captured = _capture(step_fn, backend, run, inputs, args, kwargs, half, start)
    program = _build(step_fn, backend, captured, signature, half)
    log = _capture_log(program, captured, half)
    serial = None if backend.csd is None else backend.csd.serial
    cached = _reuse_or_estimate(program, config, serial, inputs, captured.scratch, log)
    captured.scratch = []  # the copies of the state are not kept past the estimate
    if not config.validate_only:
        _fuse(program, config, inputs, log)
    program.compile_time = time.perf_counter() - start
    _report(backend, config, program, cached, serial, log)
    if config.compile_only:
        write_params(backend, program, {"run_id": None, "system": serial, "backend": backend.target})
    if config.compile_only or config.validate_only:
        print(_only_summary(config, program, serial), flush=True)
    return Compiled(program, captured.result, inputs)


def _only_summary(config, program: Program, serial: str | None) -> str:
    """What a validate_only / compile_only run says when its compile is done (stdout)."""
    what = "validate_only" if config.validate_only else "compile_only"
    head = (f"cstorch {what}: step {program.name!r} is valid for {serial} ({program.execmode}, mode "
            f"{program.mode}): {program.op_count} ops, batch size {program.batch_size}, one program")
    if config.validate_only:
        return head + ". Nothing was compiled, programmed or executed."
    return (head + f"; compiled in {program.compile_time:.3f} s, est. {program.est_samples_per_sec:g} "
            f"samples/s, checksum {program.checksum[:16]}, artifacts in {program.directory}. "
            f"The fabric was not programmed; nothing executed.")
