"""`@cstorch.compile_step` and `@cstorch.step_closure`: the step as the system runs it.

The first call of a compile_step function is the compile: it captures the whole step (forward,
loss, backward, optimizer and scheduler steps) as one static program (capture.py), measures and
writes it (program.py), opens the run on csd and programs the fabric once (csd_link.py), then
executes step 1. Every later call executes the program on the new batch: the function's Python
body does not run again, so a non-tensor variable it changes keeps its first value (004).

A step closure called inside the step is part of the program: it runs after every step, with
the values its tensors have at the end of the step. Called outside, it runs at once (the step
before it has finished executing, so every tensor is materialized).
"""

from __future__ import annotations

import functools
import sys
import time

import torch
from torch.utils._pytree import tree_flatten

from csadmin.errors import InvalidState, ReprogramForbidden

import csadmin.cstorch.current as current
import csadmin.cstorch.runtime as runtime
from .amp.emulation import capture_executor
from .amp.precision import half_format, mixed_precision
from .artifacts import lookup as lookup_artifacts, record as record_compile
from .capture import Capture
from .compiled import check_modes
from .config import current_config, require_config
from .model_dir import link_compile_dir, write_params
from .optim import core_guard
from .program import ESTIMATE_RUNS, Program
from .signature import Signature
from .summaries import Summaries


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


class StepFunction:
    """A function decorated with compile_step."""

    def __init__(self, fn):
        self.fn = fn
        self.name = getattr(fn, "__name__", "step")
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner=None):
        """A compile_step method: the instance is the step's first (non-tensor) argument."""
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        config = require_config()
        rt = runtime.get()
        if rt.backend is None:
            raise InvalidState(f"{self.name} was called before cstorch.compile.",
                               "Call cstorch.compile(model, backend='wse_ws') before the first step.")
        if rt.program is None:
            return self._compile(config, rt, args, kwargs)
        if rt.program.step_fn is not self:
            raise ReprogramForbidden(
                f"The compile_step function {self.name!r} would be a second program in this run, which "
                f"runs {rt.program.name!r}: the fabric is programmed once per run and cannot be reprogrammed.",
                "Put everything the system runs in one compile_step function; run another in a separate process.")
        inputs = rt.program.signature.tensors(args, kwargs, self.name)
        if config.compile_only or config.validate_only:
            return rt.first_result
        return self._execute(rt, inputs)

    def _execute(self, rt, inputs):
        if rt.finished:
            raise InvalidState(f"This process's run has ended (after step {current.state().step}): one run per process.",
                               "Start a new process for another run.")
        check_modes(rt.models, rt.program.mode)
        csd = rt.csd
        csd.check()
        try:
            with current.stepping():
                result, closures = rt.program.run(inputs)
        except KeyboardInterrupt:
            runtime.finish("runtime interrupted (Ctrl-C)")
            raise
        state = current.state()
        state.step += 1
        for fn, a, kw in closures:
            fn(*a, **kw)
        csd.step_done(rt.program.batch_size)
        last = state.last_step is not None and state.step >= state.last_step
        rt.summaries.step_done(state.step, result, rt.program.batch_size, last)
        if last:
            runtime.finish()
        return result

    def _compile(self, config, rt, args, kwargs):
        core_guard.install()  # a core torch.optim optimizer may not step inside the step
        start = time.perf_counter()
        signature, inputs = Signature.of(args, kwargs)
        modes = {m.training for m in rt.models}
        if len(modes) > 1:
            raise InvalidState("The compiled models disagree on train/eval mode.",
                               "Call .train() or .eval() on every compiled model the same way.")
        mode = "train" if modes.pop() else "eval"
        params = list({id(p): p for m in rt.models for p in m.parameters()}.values())
        grads_before = [p.grad for p in params]
        half = half_format()
        cap = Capture(inputs, self.name, execute=capture_executor(half))
        rt.capture, rt.captured_closures = cap, []
        try:
            # 001: the system computes in half precision with the casts inserted for it, so the
            # step runs under autocast (for each device the model lives on) and the program holds
            # its casts (a user's own autocast inside is the same context again). The weight
            # update stays float32: optimizers' elementwise ops are not among the ops autocast casts.
            devices = {p.device.type for p in params} | {t.device.type for t in inputs}
            with current.stepping(), cap, mixed_precision(devices):
                result = self.fn(*args, **kwargs)
            outputs: list = []
            result_spec, result_leaves = _leaves(result, outputs)
            grad_params = [p for p, g in zip(params, grads_before) if p.grad is not g]
            outputs += [p.grad for p in grad_params]
            closures = []
            for fn, a, kw in rt.captured_closures:
                spec, leaves = _leaves((a, kw), outputs)
                closures.append((fn, spec, leaves))
            cap.output(outputs)
            captured = time.perf_counter()
        finally:
            rt.capture = None
            scratch = cap.restore()
            for p, g in zip(params, grads_before):
                p.grad = g
        program = Program.build(
            cap.graph, name=self.name, step_fn=self, signature=signature, state=cap.state,
            result_spec=result_spec, result_leaves=result_leaves, grad_params=grad_params, closures=closures,
            mode=mode, execmode=current.execmode(), op_count=cap.op_count, half=half.name)
        log = [f"step {self.name!r}: captured {cap.op_count} aten ops, {len(cap.state)} persistent tensors, "
               f"batch size {program.batch_size}, mode {mode}, in {captured - start:.3f} s",
               f"mixed precision: float32 weights, {half.name} compute (casts inserted by autocast), float32 "
               f"weight update; executed here as float32 arithmetic on {half.name}-rounded values "
               f"(amp/emulation.py)"]
        csd = rt.csd
        serial = None if csd is None else csd.serial
        # Artifacts of this very program for this system: reuse them; for another: refused.
        cached = None if config.validate_only else lookup_artifacts(config.compile_dir, program.checksum, serial)
        if cached is not None:
            program.est_samples_per_sec, program.directory = cached.est_samples_per_sec, cached.directory
            program.cached = True
        elif not config.validate_only:
            program.estimate(inputs, scratch)
            log.append(f"estimated {program.est_samples_per_sec:g} samples/s ({ESTIMATE_RUNS} executions on copies of "
                       f"the state: each op's shortest time by the executing thread's CPU time, summed; estimate.py)")
        del scratch
        program.compile_time = time.perf_counter() - start
        if cached is not None:
            # compile_time is then what this process spent: the capture and the lookup.
            print(f"cstorch: compile cached: reusing {cached.directory} (compiled for {cached.target_system}); "
                  f"compile_time {program.compile_time:.3f} s is the capture and the lookup only", file=sys.stderr)
        else:
            log.append(f"compile_time {program.compile_time:.3f} s; size {program.size_bytes} bytes")
        if not config.validate_only and cached is None:
            program.write_artifacts(config.compile_dir, log, serial)
        if not config.validate_only:
            link_compile_dir(config.model_dir, program)
        record_compile(program, serial, cached is not None)
        if config.compile_only or config.validate_only:
            rt.program = program
            rt.first_result = result
            if config.compile_only:
                write_params(config, program, {"run_id": None, "system": serial, "backend": rt.backend},
                                       [m.model for m in rt.models])
            print(only_summary(config, program, serial), flush=True)
            return result
        runtime.close_at_exit()  # first: Ctrl-C while programming must close the run too
        csd.open(mode, program.descriptor(serial))
        rt.program = program
        rt.summaries = Summaries(config.model_dir)
        write_params(config, program, {"run_id": csd.run.id, "system": serial, "backend": rt.backend},
                               [m.model for m in rt.models])
        return self._execute(rt, inputs)


def only_summary(config, program, serial: str | None) -> str:
    """What a validate_only / compile_only run says when its compile is done (stdout)."""
    what = "validate_only" if config.validate_only else "compile_only"
    head = (f"cstorch {what}: step {program.name!r} is valid for {serial} ({program.execmode}, mode "
            f"{program.mode}): {program.op_count} ops, batch size {program.batch_size}, one program")
    if config.validate_only:
        return head + ". Nothing was compiled, programmed or executed."
    return (head + f"; compiled in {program.compile_time:.3f} s, est. {program.est_samples_per_sec:g} "
            f"samples/s, checksum {program.checksum[:16]}, artifacts in {program.directory}. "
            f"The fabric was not programmed; nothing executed.")


def compile_step(fn) -> StepFunction:
    """Decorate the function that is one whole step (see the module docstring)."""
    return StepFunction(fn)


def step_closure(fn):
    """Decorate a function that reads tensors' values: it runs after the step, with them materialized."""

    @functools.wraps(fn)
    def closure(*args, **kwargs):
        rt = runtime.get()
        if rt.capture is not None:
            rt.captured_closures.append((fn, args, kwargs))
            return None
        config = current_config()
        if rt.program is not None and (config.compile_only or config.validate_only):
            return None  # nothing runs on the system, so nothing materializes
        return fn(*args, **kwargs)

    return closure
