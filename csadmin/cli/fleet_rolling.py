"""`fleet execmode setup`: the admin's execution-mode procedure (standby → setup → activate)
rolled over several systems, at most K at once (csadmin/fleet/rolling.py).

Progress goes to stderr as it happens, tagged with the system; the per-system summary to stdout
(JSON with --output-format json). Ctrl-C stops starting systems; the started ones finish, and
the summary says which were not started. Exit status: 0 when every system is done; else the
first failure's code; else 4 (busy) when systems were skipped; 130 when interrupted.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from .. import errors
from ..shared.states import ExecMode, title
from . import render
from .action_context import ActionContext
from .fleet_actions import selected
from .grammar import Parsed

if TYPE_CHECKING:
    from ..fleet.switch import Outcome

# csadmin/fleet/ (threads, queues) is imported when the command runs: this module is loaded
# with the command table by every one-shot `cs`.


def _mode(p: Parsed) -> str:
    value = p.options.get("mode")
    if value is None:
        raise errors.UsageError("`fleet execmode setup` needs --mode.",
                                "Use --mode WEIGHT_STREAMING or --mode PIPELINED.")
    try:
        return ExecMode.parse(value).value  # the spellings `config execmode setup` takes, once
    except ValueError as exc:
        raise errors.UsageError(f"--mode: {exc}.") from None


def _max_parallel(p: Parsed) -> int:
    k = p.options.get("max_parallel")
    if k is None:
        return 1
    if k < 1:
        raise errors.UsageError(f"--max-parallel must be at least 1, not {k}.")
    return k


def _confirm(s: ActionContext, p: Parsed, names: list[str], mode: str, k: int) -> None:
    if p.options.get("no_confirm"):
        return
    if not s.console.interactive:
        raise errors.UsageError("`fleet execmode setup` changes systems and needs --no-confirm when not run "
                                "interactively.", "Add --no-confirm to run it from a script.")
    force = " Runs holding a fabric will be aborted (--force)." if p.options.get("force") else ""
    question = (f"This puts {len(names)} system(s) ({', '.join(names)}) in standby and activates them in "
                f"{title(mode)} mode, {k} at a time.{force} Do you want to proceed?")
    if not s.console.confirm(question):
        raise errors.Cancelled("Cancelled; nothing was changed.")


def execmode_setup(s: ActionContext, p: Parsed) -> int:
    if not p.options.get("systems") and not p.options.get("tag"):
        raise errors.UsageError("Name the systems: --systems a,b,c (or --tag TAG).",
                                "`cs inventory` lists them; a rolling change never picks the whole fleet by itself.")
    from ..fleet.connect import client_for
    from ..fleet.rolling import Progress, Rolling
    from ..fleet.switch import switch

    from . import fleet_render

    mode, k = _mode(p), _max_parallel(p)
    chosen = selected(p)
    force, margin = bool(p.options.get("force")), s.timeout
    _confirm(s, p, [c.name for c in chosen], mode, k)
    width = max(len(c.name) for c in chosen)

    rolling = Rolling(
        chosen,
        lambda client, say: switch(client, mode, force, margin, say),
        lambda system, context: client_for(system, timeout=s.timeout, retries=2, context=context, default_key=s.key),
        max_parallel=k, keep_going=bool(p.options.get("keep_going")),
    )
    s.console.err(f"Switching {len(chosen)} system(s) to {mode}, at most {k} at a time; Ctrl-C stops starting more.")

    def show(items: list) -> None:
        for item in items:
            text = item.text if isinstance(item, Progress) else f"{item.outcome}: {item.reason}"
            s.console.err(fleet_render.tagged(item.system, width, text))

    with _ctrl_c_counted() as presses:
        told = 0
        while not rolling.finished():
            if presses and told < len(presses):
                told = len(presses)
                if not rolling.interrupted:
                    rolling.stop("interrupted")
                    running = rolling.running
                    s.console.err(f"Interrupted: no more systems will be started; waiting for "
                                  f"{', '.join(running) if running else 'none'} to finish.")
                else:
                    s.console.err("Still waiting for the systems already started to finish.")
            show(rolling.poll())
    outcomes = rolling.summary()
    if s.json(p):
        s.console.out(render.as_json({"execmode": mode, "interrupted": rolling.interrupted,
                                      "systems": [fleet_render.outcome_json(o) for o in outcomes]}))
    else:
        s.console.out(fleet_render.rolling_summary(outcomes, mode))
    return _exit_code(outcomes, rolling.interrupted)


@contextlib.contextmanager
def _ctrl_c_counted():
    """While the change rolls, Ctrl-C (SIGINT) is counted rather than raised: a KeyboardInterrupt
    could land between taking a system's outcome off the queue and recording it, and the loop
    would then wait forever for a system that has ended. Yields the list of presses."""
    import signal
    import threading

    presses: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield presses  # signals reach the main thread only; whoever runs us there handles them
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: presses.append(signum))
    try:
        yield presses
    finally:
        signal.signal(signal.SIGINT, previous)


def _exit_code(outcomes: list[Outcome], interrupted: bool) -> int:
    from ..fleet.switch import DONE, FAILED, SKIPPED

    if interrupted:
        return errors.EXIT_INTERRUPTED
    failed = [o for o in outcomes if o.outcome == FAILED]
    if failed:
        return failed[0].exit_code
    if any(o.outcome == SKIPPED for o in outcomes):
        return errors.EXIT_BUSY
    assert all(o.outcome == DONE for o in outcomes)
    return errors.EXIT_OK
