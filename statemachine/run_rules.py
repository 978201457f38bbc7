"""The rules of runs, as data: what each request does to a run in each phase, and when a run
may be opened. Messages and next steps are written once, here; statemachine/runs.py applies them.
"""

from __future__ import annotations

from dataclasses import dataclass

from csadmin.errors import CsError, InvalidState, ReprogramForbidden, RunAborted
from csadmin.states import Lifecycle

from .rules import GO, Already, Go

# A run is in one phase: open with its fabric in one of three states, or ended.
OPEN_UNPROGRAMMED = "OPEN/UNPROGRAMMED"
OPEN_PROGRAMMING = "OPEN/PROGRAMMING"
OPEN_PROGRAMMED = "OPEN/PROGRAMMED"
CLOSED = "CLOSED"
ABORTED = "ABORTED"
PHASES = (OPEN_UNPROGRAMMED, OPEN_PROGRAMMING, OPEN_PROGRAMMED, CLOSED, ABORTED)
OPEN_PHASES = (OPEN_UNPROGRAMMED, OPEN_PROGRAMMING, OPEN_PROGRAMMED)


@dataclass(frozen=True)
class Refuse:
    """Refuse with `error`; `message`/`hint` are formatted with run_id, reason, until."""

    error: type[CsError]
    message: str
    hint: str


_NEW_RUN = "Open a new run (run.open) and program it."
_CLOSED = Refuse(InvalidState, "Run {run_id} is closed; its fabric was released.", _NEW_RUN)
_ABORTED = Refuse(RunAborted, "Run {run_id} was aborted: {reason}.", _NEW_RUN)
_REPROGRAM_HINT = "Reprogramming after initial programming is not permitted; close this run and open a new one."

RUN_RULES: dict[tuple[str, str], Go | Already | Refuse] = {
    ("program", OPEN_UNPROGRAMMED): GO,
    ("program", OPEN_PROGRAMMING): Refuse(
        ReprogramForbidden, "Run {run_id} is already programming the fabric; it may be programmed once per run.",
        _REPROGRAM_HINT,
    ),
    ("program", OPEN_PROGRAMMED): Refuse(
        ReprogramForbidden, "The fabric was already programmed in run {run_id}; it may be programmed once per run.",
        _REPROGRAM_HINT,
    ),
    ("program", CLOSED): _CLOSED,
    ("program", ABORTED): _ABORTED,
    ("stream", OPEN_UNPROGRAMMED): Refuse(
        InvalidState, "Run {run_id} has not programmed the fabric yet.", "Program it first (run.program), then stream."
    ),
    ("stream", OPEN_PROGRAMMING): Refuse(
        InvalidState, "Run {run_id} is still programming the fabric (until {until}).",
        "Wait for EventProgrammingFinished (the client's run.program() waits by default), then stream.",
    ),
    ("stream", OPEN_PROGRAMMED): GO,
    ("stream", CLOSED): _CLOSED,
    ("stream", ABORTED): _ABORTED,
    ("heartbeat", OPEN_UNPROGRAMMED): GO,
    ("heartbeat", OPEN_PROGRAMMING): GO,
    ("heartbeat", OPEN_PROGRAMMED): GO,
    ("heartbeat", CLOSED): _CLOSED,
    ("heartbeat", ABORTED): _ABORTED,
    ("close", OPEN_UNPROGRAMMED): GO,
    ("close", OPEN_PROGRAMMING): GO,
    ("close", OPEN_PROGRAMMED): GO,
    ("close", CLOSED): Already("Run {run_id} is already closed."),
    ("close", ABORTED): _ABORTED,
    ("abort", OPEN_UNPROGRAMMED): GO,
    ("abort", OPEN_PROGRAMMING): GO,
    ("abort", OPEN_PROGRAMMED): GO,
    ("abort", CLOSED): Refuse(
        InvalidState, "Run {run_id} is already closed; there is nothing to abort.", "`runs list` shows the open run, if any."
    ),
    ("abort", ABORTED): Already("Run {run_id} is already aborted ({reason})."),
}

_WAIT_ACTIVE = "Wait for ACTIVE (client.wait_for(state='ACTIVE'), or `cs system show`), then open the run."
OPEN_RULES: dict[Lifecycle, Go | Refuse] = {
    Lifecycle.ACTIVE: GO,
    Lifecycle.STANDBY: Refuse(
        InvalidState, "A run can only be opened when the system is ACTIVE; it is in STANDBY.",
        "An admin must activate it (`system activate`); " + _WAIT_ACTIVE,
    ),
    Lifecycle.PENDING_ACTIVE: Refuse(
        InvalidState, "A run can only be opened when the system is ACTIVE; it is activating (PENDING_ACTIVE).",
        _WAIT_ACTIVE,
    ),
    Lifecycle.PENDING_STANDBY: Refuse(
        InvalidState, "A run can only be opened when the system is ACTIVE; it is going to standby (PENDING_STANDBY).",
        "An admin must activate it again (`system activate`); " + _WAIT_ACTIVE,
    ),
}
