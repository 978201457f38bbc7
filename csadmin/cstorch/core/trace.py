"""`@cstorch.compile_step` and `@cstorch.step_closure`: the step as the system runs it.

The first call of a compile_step function is the compile: it captures the whole step (forward,
loss, backward, optimizer and scheduler steps) as one static program (capture.py), measures and
writes it (program.py), opens the run on csd and programs the fabric once (csd_link.py), then
executes step 1. Every later call executes the program on the new batch: the function's Python
body does not run again, so a non-tensor variable it changes keeps its first value (004).

A step closure called inside the step is part of the program: it runs after every step, with
the values its tensors have at the end of the step. Called outside, it runs at once (the step
before it has finished executing, so every tensor is materialized). closures.py says when a
closure is due (a DataExecutor's activation steps, its checkpoint steps).

`@cstorch.trace` (the later releases' name) is this same machinery: a StepFunction that says
"trace" in its messages. With a backend made by `cstorch.backend(...)`, a step runs only inside
a DataExecutor's loop (each DataExecutor is a run: its first step captures the program anew); a
CPU or GPU backend runs the function eagerly every step (eager.py); with
`cstorch.backends.csx.debug.retrace_every_iteration` every step is captured again and a changed
graph is refused (retrace.py).
"""

from __future__ import annotations

import functools
import sys
import time

import torch
from torch.utils._pytree import tree_flatten

from csadmin.errors import InvalidState, ReprogramForbidden, RunAborted

from ..backend import process_backend
from .half_precision import capture_executor
from ..amp.precision import half_format, step_autocast
from .artifacts import lookup as lookup_artifacts, record as record_compile
from .bindings import Bindings
from .capture import Capture
from ..utils.step_closures import dispatch, when_due
from .compile import check_modes, run_mode
from .eager import step as eager_step
from .model_dir import link_compile_dir, write_params
from ..optim import core_guard
from .program import ESTIMATE_RUNS, Program
from .retrace import check as check_retrace, ops as traced_ops
from .signature import Signature
from ..utils.tensorboard.run_events import Summaries


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
    """A function decorated with compile_step (or, the same, with trace)."""

    def __init__(self, fn, decorator: str = "compile_step"):
        self.fn = fn
        self.decorator = decorator  # how the script named it, for messages
        self.name = getattr(fn, "__name__", "step")
        #: how messages name it: "compile_step function 'train_step'" (or "trace function …");
        #: made once, as every replayed step hands it to the signature check
        self.described = f"{decorator} function {self.name!r}"
        functools.update_wrapper(self, fn)

    def __get__(self, instance, owner=None):
        """A compile_step method: the instance is the step's first (non-tensor) argument."""
        return self if instance is None else functools.partial(self, instance)

    def __call__(self, *args, **kwargs):
        backend = process_backend.current()
        config = backend.require_config()
        if backend.target is None:
            raise InvalidState(f"{self.name} was called before cstorch.compile.",
                               "Call cstorch.compile(model, backend='wse_ws') before the first step.")
        run = backend.run
        if backend.executor_required and backend.executor is None:
            raise InvalidState(
                f"Detected that a data executor was not used: the {self.described} was called "
                f"outside a DataExecutor's loop.",
                "Wrap your dataloader in a Cerebras DataExecutor (executor = cstorch.utils.data.DataExecutor("
                "dataloader, ...)) and call the step inside `for batch in executor:`.")
        if backend.kind in ("CPU", "GPU"):
            return eager_step(self, backend, run, args, kwargs)
        if run.program is None:
            return self._compile(backend, config, run, args, kwargs)
        if run.program.step_fn is not self:
            raise ReprogramForbidden(
                f"The {self.described} would be a second program in this run, which "
                f"runs {run.program.name!r}: the fabric is programmed once per run and cannot be reprogrammed.",
                f"Put everything the system runs in one {self.decorator} function; run another in a separate process.")
        inputs = run.program.signature.tensors(args, kwargs, self.described)
        if config.compile_only or config.validate_only:
            return run.first_result
        if backend.csx.debug.retrace_every_iteration:
            check_retrace(self, backend, run, args, kwargs, inputs)
        return self._execute(backend, run, inputs)

    def _execute(self, backend, run, inputs):
        if run.finished:
            if run.csd is not None:
                run.csd.check()  # csd aborted it: every later step says so
            raise InvalidState(f"This process's run has ended (after step {run.step}): one run per process.",
                               "Start a new process for another run.")
        check_modes(backend.models, run.program.mode)
        run.bindings.check()  # no parameter frozen, unfrozen or rebound since the capture
        csd = run.csd
        try:
            csd.check()
            with backend.stepping():
                result, closures = run.program.run(inputs)
            run.step += 1
            for fn, a, kw in closures:
                fn(*a, **kw)
            csd.step_done(run.program.batch_size)
        except KeyboardInterrupt:
            run.finish("runtime interrupted (Ctrl-C)")
            raise
        except RunAborted:
            run.finish()  # csd ended it: the input workers stop now, the TensorBoard file is closed
            raise
        last = run.last_step is not None and run.step >= run.last_step
        run.summaries.step_done(run.step, result, run.program.batch_size, last)
        if last:
            run.finish()
        return result

    def _compile(self, backend, config, run, args, kwargs):
        core_guard.install(backend)  # a core torch.optim optimizer may not step inside the step
        start = time.perf_counter()
        signature, inputs = Signature.of(args, kwargs)
        params = backend.parameters()
        grads_before = [p.grad for p in params]
        versions = [p._version for p in params]  # an in-place update bumps it: the step trains them
        half = half_format()
        cap = Capture(inputs, self.described, execute=capture_executor(half))
        run.capture, run.captured_closures = cap, []
        try:
            # 001: the system computes in half precision with the casts inserted for it, so the
            # step runs under autocast (for each device the model lives on) and the program holds
            # its casts (a user's own autocast inside is the same context again). The weight
            # update stays float32: optimizers' elementwise ops are not among the ops autocast casts.
            with backend.stepping(), cap, step_autocast([*params, *inputs]):
                result = self.fn(*args, **kwargs)
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
            captured = time.perf_counter()
        finally:
            run.capture = None
            scratch = cap.restore()
            for p, g in zip(params, grads_before):
                p.grad = g
        mode = run_mode(backend.models, trains, self.name)  # the program's, and what the script said
        program = Program.build(
            cap.graph, name=self.name, step_fn=self, signature=signature, state=cap.state,
            result_spec=result_spec, result_leaves=result_leaves, grad_params=grad_params, closures=closures,
            mode=mode, execmode=backend.execmode, op_count=cap.op_count, half=half.name)
        log = [f"step {self.name!r}: captured {cap.op_count} aten ops, {len(cap.state)} persistent tensors, "
               f"batch size {program.batch_size}, mode {mode}, in {captured - start:.3f} s",
               f"mixed precision: float32 weights, {half.name} compute (casts inserted by autocast), float32 "
               f"weight update; executed here as float32 arithmetic on {half.name}-rounded values "
               f"(amp/emulation.py)"]
        csd = backend.csd
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
        if backend.executor_required:
            log.append(f"backends.csx: {backend.csx.settings()} (recorded: the numerics here are PyTorch's)")
        if cached is not None:
            # compile_time is then what this process spent: the capture and the lookup.
            print(f"cstorch: compile cached: reusing {cached.directory} (compiled for {cached.target_system}); "
                  f"compile_time {program.compile_time:.3f} s is the capture and the lookup only", file=sys.stderr)
        else:
            log.append(f"compile_time {program.compile_time:.3f} s; size {program.size_bytes} bytes")
        if not config.validate_only and cached is None:
            program.write_artifacts(config.compile_dir, log, serial)
        if not config.validate_only:
            link_compile_dir(backend.run_dir(), program)
        record_compile(config, program, serial, cached is not None)
        if config.compile_only or config.validate_only:
            run.program = program
            run.first_result = result
            if config.compile_only:
                write_params(backend, program, {"run_id": None, "system": serial, "backend": backend.target})
            print(only_summary(config, program, serial), flush=True)
            return result
        process_backend.close_at_exit()  # first: Ctrl-C while programming must close the run too
        csd.open(mode, program.descriptor(serial), backend.run_dir(), flat=run.executor is not None)
        run.csd, run.program = csd, program
        run.bindings = Bindings.of([m.model for m in backend.models], program.state)
        run.summaries = Summaries(backend.run_dir(), backend)
        write_params(backend, program, {"run_id": csd.run.id, "system": serial, "backend": backend.target})
        return self._execute(backend, run, inputs)


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


def trace(fn) -> StepFunction:
    """The later releases' name for compile_step: the same step, captured once per run."""
    return StepFunction(fn, "trace")


def step_closure(fn):
    """Decorate a function that reads tensors' values: it runs after the step, with them
    materialized (on a DataExecutor's activation steps: closures.py)."""
    due = when_due(fn)

    @functools.wraps(fn)
    def closure(*args, **kwargs):
        return dispatch(due, args, kwargs)

    return closure
