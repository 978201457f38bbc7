"""One run of a compiled program on the system, as this process holds it: from the first step's
compile to the close.

    run.program        # program.Program, once the first step compiled (None before)
    run.step           # completed steps (first_step before the first; a resumed run starts higher)
    run.last_step      # the run's final step, once the DataLoader's iterator knows it
    run.finish(reason) # close it on csd (once): ABORTED with `reason`, performance.json, TensorBoard

The process backend (backend/process_backend.py) holds the run in progress. A run that ended stays
there, `finished`, so the next step is refused with the one-run-per-process rule instead of opening
another — unless it was a DataExecutor's (`executor` set): each DataExecutor is a run of its own,
and the next one replaces it (utils/data/data_executor.py). Such a run also carries its own
directory (`model_dir`: the executor's artifact directory), its checkpoint schedule and its
activation steps; a run of R1.8's leaves them None and the configuration's apply. Stdlib only.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from csadmin.errors import CsError


@dataclass
class Run:
    program: object = None  # program.Program once the first step compiled
    capture: object = None  # capture.Capture while the first step is captured
    captured_closures: list = field(default_factory=list)  # step closures called inside the capture
    first_result: object = None  # compile_only / validate_only: what every step returns
    first_step: int = 0  # the step count before the run's first step
    step: int = 0  # completed steps
    last_step: int | None = None  # the run's final step, when the DataLoader's iterator knows it
    csd: object = None  # csd_link.CsdLink, once the run is open on csd
    bindings: object = None  # bindings.Bindings: what the program was captured with, checked every step
    summaries: object = None  # run_events.Summaries (TensorBoard) while the run executes
    scalars: dict = field(default_factory=dict)  # scalar_summary's values not yet saved: name → float
    before_close: list = field(default_factory=list)  # called before the run closes (input workers' last samples)
    finished: bool = False  # its last step ran, or it was aborted or interrupted
    executor: object = None  # the DataExecutor whose run this is (None: R1.8's one run per process)
    model_dir: str | None = None  # where its performance.json, yaml and events go (None: configure's model_dir)
    checkpoint_schedule: object = None  # a DataExecutor's Schedule of 0-indexed steps (None: checkpoint_steps)
    activation_steps: int = 1  # step closures run on every activation_steps-th step and the last
    in_loop: bool = False  # a DataExecutor's loop is running it (weights only on its checkpoint steps)
    queued_closures: list = field(default_factory=list)  # an eager (CPU/GPU) step's step closures, run after it
    traced_ops: tuple = ()  # the first capture's aten ops, in order (a retrace is compared with them)

    @property
    def mode(self) -> str | None:
        """"train" or "eval" once the program is compiled."""
        return None if self.program is None else self.program.mode

    def is_activation_step(self) -> bool:
        """Whether step closures run after the last completed step: before any step, on every
        activation_steps-th step of the run and on its last (the real DataExecutor's rule)."""
        done = self.step - self.first_step
        return done == 0 or done % self.activation_steps == 0 or self.step == self.last_step

    def expect_steps(self, count: int | None) -> None:
        """A DataLoader's iterator will feed `count` more steps (None: unknown): the step after
        them is the run's last, on which weights may always be fetched."""
        self.last_step = None if count is None else self.step + count

    def finish(self, reason: str | None = None) -> None:
        """End the run (once): let the input workers report their last samples, close it on csd
        (ABORTED with `reason`, or with a failing worker's) and write performance.json. A worker's
        failure is raised once the run is closed."""
        if self.finished:
            return
        self.finished = True
        failure = None
        for hook in self.before_close:
            try:
                hook()
            except CsError as exc:
                failure = exc
                reason = reason or getattr(exc, "reason", None) or exc.message
        try:
            if self.csd is not None:
                self.csd.close(reason)
        finally:
            if self.summaries is not None:
                self.summaries.close()
        if failure is not None:
            raise failure

    def end_of_process(self) -> None:
        """The process ends (or the backend is reset): close the run if it is still open; an
        uncaught exception (Ctrl-C too) ends it ABORTED. Never raises."""
        if self.finished or (self.csd is None and not self.before_close):
            return  # nothing was opened on csd, and no input worker runs
        exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        reason = None if exc is None else f"runtime failed: {type(exc).__name__}: {exc}"
        if isinstance(exc, KeyboardInterrupt):
            reason = "runtime interrupted (Ctrl-C)"
        try:
            self.finish(reason)
        except Exception as err:  # the process is ending: say why the run was not closed, never raise
            print(f"cstorch: could not close the run on csd: {err}", file=sys.stderr)
