"""The rules of runs, as data: what each request does to a run in each phase, when a run may be
opened, and what a program must match to be programmed. Messages and next steps are written once,
here; statemachine/runs.py applies them.
"""

from __future__ import annotations

from dataclasses import dataclass

from csadmin.errors import (Busy, IncompatibleProgram, InvalidArgument, InvalidState, NotFound, PermissionDenied,
                            ReprogramForbidden, RunAborted)
from csadmin.shared.states import ExecMode, Lifecycle

from csadmin.shared.programs import TRAIN_AND_EVAL, TRAIN_AND_EVAL_NEXT, TRAIN_AND_EVAL_WHY
from .rules import GO, Already, Go, Refuse

# A run is in one phase (Run.phase): open with its fabric in one of three states, or ended.
OPEN_UNPROGRAMMED = "OPEN/UNPROGRAMMED"
OPEN_PROGRAMMING = "OPEN/PROGRAMMING"
OPEN_PROGRAMMED = "OPEN/PROGRAMMED"
CLOSED = "CLOSED"
ABORTED = "ABORTED"
PHASES = (OPEN_UNPROGRAMMED, OPEN_PROGRAMMING, OPEN_PROGRAMMED, CLOSED, ABORTED)

# RUN_RULES' messages may name {run_id}, {reason} (why it was aborted) and {until} (when
# programming completes).
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
    # An input worker joins an open run at any point (it streams once the fabric is PROGRAMMED)
    # and leaves it while it is open; once the run ended, it is told why, like the opener.
    ("join", OPEN_UNPROGRAMMED): GO,
    ("join", OPEN_PROGRAMMING): GO,
    ("join", OPEN_PROGRAMMED): GO,
    ("join", CLOSED): _CLOSED,
    ("join", ABORTED): _ABORTED,
    ("leave", OPEN_UNPROGRAMMED): GO,
    ("leave", OPEN_PROGRAMMING): GO,
    ("leave", OPEN_PROGRAMMED): GO,
    ("leave", CLOSED): _CLOSED,
    ("leave", ABORTED): _ABORTED,
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


# -- what a program must match (run.program) -----------------------------------------------------


def _a(word: str) -> str:
    """`word` with its indefinite article: "a train", "an eval"."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


def _fields(got: str, want: str) -> dict:
    return {"got": got, "want": want, "a_got": _a(got), "a_want": _a(want)}


@dataclass(frozen=True)
class MustMatch:
    """Refuse a program whose `field` differs from `fact`: the system's `serial`, its active
    `execmode`, or the run's `mode`."""

    field: str
    fact: str
    refuse: Refuse

    def broken_by(self, program: dict, facts: dict) -> dict | None:
        """The fields of the refusal's message if `program` breaks this rule, else None."""
        got, want = program[self.field], facts[self.fact]
        return None if got == want else _fields(got, want)


@dataclass(frozen=True)
class MustNotBe:
    """Refuse a program whose `field` is `value`."""

    field: str
    value: str
    refuse: Refuse

    def broken_by(self, program: dict, facts: dict) -> dict | None:
        got = program[self.field]
        return _fields(got, got) if got == self.value else None


# Checked in this order; the first that fails refuses. Messages may name {got} (the program's
# value), {want} (the fact's), {a_got} / {a_want} (with their article: "an eval") and {run_id}.
PROGRAM_RULES: tuple[MustMatch | MustNotBe, ...] = (
    MustMatch("target_system", "serial", Refuse(
        IncompatibleProgram,
        "The program was compiled for {got}, but this system is {want}: a model compiled on one CS system "
        "cannot run on another.",
        "Compile it for {want} and program the new artifact in this run.",
    )),
    MustMatch("execmode", "execmode", Refuse(
        IncompatibleProgram,
        "The program was compiled for {got}, but the system runs in {want}.",
        "Compile it for {want}, or ask an admin to switch the execution mode (`config execmode setup`, "
        "then `system activate`).",
    )),
    MustNotBe("mode", TRAIN_AND_EVAL, Refuse(
        IncompatibleProgram,
        f"The program was compiled for {TRAIN_AND_EVAL}, which is not supported: {TRAIN_AND_EVAL_WHY}.",
        TRAIN_AND_EVAL_NEXT,
    )),
    MustMatch("mode", "mode", Refuse(
        IncompatibleProgram,
        "The program was compiled for {got}, but run {run_id} is {a_want} run.",
        "Program {a_want} artifact, or open {a_got} run for this one.",
    )),
)


def check_program(run, program: dict, serial: str, execmode: ExecMode) -> None:
    """Refuse `program` for `run` by the first of PROGRAM_RULES it breaks, in their order."""
    facts = {"serial": serial, "execmode": execmode.value, "mode": run.mode}
    for rule in PROGRAM_RULES:
        fields = rule.broken_by(program, facts)
        if fields is not None:
            raise rule.refuse.refusal(run_id=run.run_id, **fields)


# Who may use a run, and its input workers (statemachine/runs.py: get, feeder, program, join,
# leave). Messages may name {run_id}, {owner}, {worker}, {name}, {slots} and {taken}.
NO_SUCH_RUN = Refuse(NotFound, "No run {run_id!r}.", "`runs list` shows the kept runs; run ids look like run-000042.")
WORKERS_ONLY_FEED = Refuse(
    PermissionDenied, "{worker} is an input worker of run {run_id}: workers may only stream and heartbeat.",
    "The run's opener ({owner}) programs, closes or aborts it.",
)
ANOTHER_CLIENTS = Refuse(
    PermissionDenied, "Run {run_id} belongs to another client ({owner}).",
    "Use the run your client opened, or join it as an input worker with its join token (run.join); "
    "an admin can abort another client's run (`runs abort`).",
)
WORKER_LEFT = Refuse(InvalidState, "{worker} left run {run_id}; it no longer feeds it.",
                     "Join it again (run.join with the token) to feed it once more.")
ALREADY_ADMITS = Refuse(InvalidArgument, "Run {run_id} already admits {slots} input workers (asked for at run.open).",
                        "Program it without `workers`; its workers join with the token run.open gave.")
# The same answer for an unknown run and a wrong token: a stranger learns nothing.
NOT_THE_TOKEN = Refuse(
    PermissionDenied, "Access denied: that is not the join token of run {run_id}, or the run admits no input workers.",
    "Use the joinToken its opener got from run.open (opened with workers=N); ask the opener for it.",
)
OPENER_JOINS = Refuse(InvalidArgument, "This client opened run {run_id}; it feeds it as its opener, not as an input worker.",
                      "Join from the worker process (its own key or socket), or just stream from the opener.")
SLOTS_TAKEN = Refuse(Busy, "All {slots} worker slots of run {run_id} are taken ({taken}).",
                     "Open the run with more workers (run.open workers=N), or let this process feed through another.")
NAME_TAKEN = Refuse(InvalidArgument, "Run {run_id} already has a feeder named {name!r}.",
                    "Give each worker its own name, or none.")
NOT_A_WORKER = Refuse(PermissionDenied, "This client is not an input worker of run {run_id}.",
                      "Only a worker that joined (run.join) leaves; the opener closes the run (run.close).")
