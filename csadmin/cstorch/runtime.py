"""The runtime's own process-wide objects: the compiled models, the link to csd, the program.

One run per process (004), so one Runtime: compile() adds models and opens the link to csd,
the first compile_step call sets the program, the last step (or the process's end) closes
the run. The facts the library reads are in current.py; this is what only the runtime touches.
"""

from __future__ import annotations

import atexit
import sys
from dataclasses import dataclass, field

import csadmin.cstorch.current as current
from csadmin.errors import CsError

from .config import reset as forget_config


@dataclass
class Runtime:
    backend: str | None = None
    models: list = field(default_factory=list)  # CompiledModel, in compile order
    csd: object = None  # csd_link.CsdLink once compile() reached csd
    program: object = None  # program.Program once the first step compiled
    capture: object = None  # capture.Capture while the first step is captured
    captured_closures: list = field(default_factory=list)
    first_result: object = None  # compile_only / validate_only: what every step returns
    exit_hook: bool = False  # end_of_process is registered with atexit
    finished: bool = False  # the run ended (its last step ran, or it was aborted or interrupted)
    summaries: object = None  # summaries.Summaries while a run executes (TensorBoard)
    before_close: list = field(default_factory=list)  # called before the run closes (input workers' last samples)

    @property
    def run_mode(self) -> str | None:
        return None if self.program is None else self.program.mode


_runtime = Runtime()


def get() -> Runtime:
    return _runtime


def reset() -> None:
    """Close any open run and forget everything (tests; `python -m csadmin.cstorch`)."""
    global _runtime
    end_of_process()
    _runtime = Runtime()
    current.reset()
    forget_config()


def finish(reason: str | None = None) -> None:
    """End the run (once): let the input workers report their last samples, close it on csd
    (ABORTED with `reason`, or with a failing worker's) and write performance.json. A worker's
    failure is raised once the run is closed."""
    rt = _runtime
    if rt.finished:
        return
    rt.finished = True
    failure = None
    for hook in rt.before_close:
        try:
            hook()
        except CsError as exc:
            failure = exc
            reason = reason or getattr(exc, "reason", None) or exc.message
    try:
        if rt.csd is not None:
            rt.csd.close(reason)
    finally:
        if rt.summaries is not None:
            rt.summaries.close()
    if failure is not None:
        raise failure


def end_of_process() -> None:
    """atexit: close a run still open; an uncaught exception (Ctrl-C too) ends it ABORTED."""
    if _runtime.finished or _runtime.csd is None:
        return
    exc = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    reason = None if exc is None else f"runtime failed: {type(exc).__name__}: {exc}"
    if isinstance(exc, KeyboardInterrupt):
        reason = "runtime interrupted (Ctrl-C)"
    try:
        finish(reason)
    except Exception as err:  # the process is ending: say why the run was not closed, never raise
        print(f"cstorch: could not close the run on csd: {err}", file=sys.stderr)


def close_at_exit() -> None:
    """Once a run is open: close it when the process ends, whatever ends it."""
    if not _runtime.exit_hook:
        atexit.register(end_of_process)
        _runtime.exit_hook = True
