"""`@cstorch.compile_step` and `@cstorch.trace`: the step as the system runs it.

The first call of a compile_step function in a run compiles it (core/compiler.py: the whole step
— forward, loss, backward, optimizer and scheduler steps — captured as one static program, its
artifacts reused or written), then `_open_run` opens the run on csd, which programs the fabric
once (backend/csd_link.py), and step 1 executes. Every later call executes the program on the
new batch: the function's Python body does not run again, so a non-tensor variable it changes
keeps its first value (004). compile_only and validate_only stop after the compile: every call
then returns the first step's result.

`@cstorch.trace` (the later releases' name) is this same machinery: a StepFunction that says
"trace" in its messages. With a backend made by `cstorch.backend(...)`, a step runs only inside
a DataExecutor's loop (each DataExecutor is a run: its first step compiles the program anew); a
CPU or GPU backend runs the function eagerly every step (core/eager.py); with
`cstorch.backends.csx.debug.retrace_every_iteration` every step is captured again and a changed
graph is refused (core/retrace.py). Step closures are utils/step_closures.py's.
"""

from __future__ import annotations

import functools

from csadmin.errors import InvalidState, ReprogramForbidden, RunAborted

from ..backend import process_backend
from .bindings import Bindings
from .compile import check_modes
from .compiler import compile_program
from .eager import step as eager_step
from .model_dir import write_params
from .retrace import check as check_retrace
from ..utils.tensorboard.run_events import Summaries


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
            return self._first_step(backend, config, run, args, kwargs)
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
            for closure in closures:
                closure()
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

    def _first_step(self, backend, config, run, args, kwargs):
        """Compile the step (core/compiler.py); then, unless the run only compiles or validates,
        open the run on csd and execute step 1."""
        compiled = compile_program(self, backend, config, run, args, kwargs)
        if config.compile_only or config.validate_only:
            run.program, run.first_result = compiled.program, compiled.result
            return compiled.result
        _open_run(backend, run, compiled.program)
        return self._execute(backend, run, compiled.inputs)


def _open_run(backend, run, program) -> None:
    """Open the run on csd with `program` (the fabric is programmed once, for the run's mode),
    bind the program's state to the compiled models' parameters (core/bindings.py), start the
    run's TensorBoard events and write its yaml (with csd's run id)."""
    process_backend.close_at_exit()  # first: Ctrl-C while programming must close the run too
    csd = backend.csd
    csd.open(program.mode, program.descriptor(csd.serial), backend.run_dir(), flat=run.executor is not None)
    run.csd, run.program = csd, program
    run.bindings = Bindings.of([m.model for m in backend.models], program.state)
    run.summaries = Summaries(backend.run_dir(), backend)
    write_params(backend, program, {"run_id": csd.run.id, "system": csd.serial, "backend": backend.target})


def compile_step(fn) -> StepFunction:
    """Decorate the function that is one whole step (see the module docstring)."""
    return StepFunction(fn)


def trace(fn) -> StepFunction:
    """The later releases' name for compile_step: the same step, captured once per run."""
    return StepFunction(fn, "trace")

