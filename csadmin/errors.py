"""Every error csadmin knows, defined once: its wire code, its class, the exit code `cs` returns
for it and its default hint.

The model raises these classes (a refusal says what happened and what to do next), csd encodes
them on the wire, and the client decodes a reply's code back into the same class, so a runtime
catches `Busy` alike whether csd refused or its own client did. `WIRE_CODES`, the closed set of
codes a reply may carry, is derived from the classes below. Stdlib only and importing nothing of
ours: every layer, the pure model included, may import it (docs/design.md, "Errors").

A new error code is a new class here (and a line in docs/protocol.md); nothing else changes.
Three classes also derive from the builtin the vendor's cerebras.pytorch raises for the same
failure (InvalidArgument: ValueError; InvalidState, ReprogramForbidden: RuntimeError), so a
cstorch script's `except` clauses catch here what they catch on the real package. No `except
ValueError` / `except RuntimeError` of csd, cs or the client wraps code that raises them.
"""

from __future__ import annotations

# Exit codes, one per error class (README, "Exit codes"). Never 0 on failure.
EXIT_OK = 0
EXIT_CANCELLED = 1  # the user answered "no" to a confirmation
EXIT_USAGE = 2  # bad command line, bad argument, or a confirmation needed but not possible
EXIT_STATE = 3  # refused by the system's state (or a rule of the fabric)
EXIT_BUSY = 4
EXIT_PERMISSION = 5
EXIT_NOT_FOUND = 6
EXIT_UNREACHABLE = 7  # daemon not reachable, or no answer / no completion within --timeout
EXIT_INTERNAL = 8
EXIT_INTERRUPTED = 130  # Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: whoever read our output went away (`cs … | head`)

# What each exit code means, for `cs --help` (the README's table says the same at more length).
EXIT_CODES = (
    (EXIT_OK, "success (also \"already in that state\")"),
    (EXIT_CANCELLED, "cancelled: you answered no"),
    (EXIT_USAGE, "usage: bad command, option or value; --no-confirm needed in a script"),
    (EXIT_STATE, "refused by the system's state (or an active fault)"),
    (EXIT_BUSY, "busy: a run holds the fabric"),
    (EXIT_PERMISSION, "permission denied: role, key or socket access"),
    (EXIT_NOT_FOUND, "not found"),
    (EXIT_UNREACHABLE, "unreachable, or not done within --timeout"),
    (EXIT_INTERNAL, "internal error in csd (see its log)"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
    (EXIT_BROKEN_PIPE, "the reader of cs's output went away (`cs … | head`)"),
)


class CsError(Exception):
    """Base of every error csadmin raises. `code` is its UPPER_SNAKE wire code, `exit_code` what
    `cs` returns, `hint` the next step when the raiser names none, and `on_wire` whether csd may
    answer with it (False: only the client side raises it)."""

    code = "INTERNAL"
    exit_code = EXIT_INTERNAL
    hint = ""
    # A next step each surface says in its own words, after the hint (FaultActive: how to wait for
    # the fault to clear). csd cannot know who asked, so it never sends these: str(exc), what a
    # runtime sees, ends with `api_step`; the console shows console_hint(), ending with `console_step`.
    api_step = ""
    console_step = ""
    on_wire = False
    fault: str | None = None  # the fault that caused it, if one did (on the wire as `fault`)
    keeps_change = False  # True: what the model did before raising stands (TransitionFailed)
    asked_for = False  # True: the person stopped it ("n", Ctrl-C); said plainly, not as an error

    def __init__(self, message: str, hint: str | None = None, fault: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = type(self).hint if hint is None else hint
        if fault is not None:
            self.fault = fault

    def __str__(self) -> str:
        return " ".join(part for part in (self.message, self.hint, self.api_step) if part)

    def console_hint(self) -> str:
        """The hint as `cs` shows it: csd's (or the default) and the console's own next step."""
        return " ".join(part for part in (self.hint, self.console_step) if part)


# -- csd's answers (on the wire) -----------------------------------------------------------------


class BadRequest(CsError):
    """Not a request: not JSON, not an object, a bad envelope."""

    code, exit_code, on_wire = "BAD_REQUEST", EXIT_USAGE, True
    hint = 'Send one UTF-8 JSON object per frame: {"v":1,"id":...,"op":...,"args":{}}.'


class UnsupportedVersion(CsError):
    """`v` is not a protocol version this csd speaks."""

    code, exit_code, on_wire = "UNSUPPORTED_VERSION", EXIT_INTERNAL, True


class UnknownOp(CsError):
    code, exit_code, on_wire = "UNKNOWN_OP", EXIT_USAGE, True


class InvalidArgument(CsError, ValueError):
    """A missing, extra or wrongly typed argument, or a bad value. A ValueError too, as the
    vendor's cerebras.pytorch raises for a bad argument: a script's `except ValueError` catches it."""

    code, exit_code, on_wire = "INVALID_ARGUMENT", EXIT_USAGE, True


class InvalidState(CsError, RuntimeError):
    """Not allowed in the system's (or the run's) current state. A RuntimeError too, as the
    vendor's cerebras.pytorch raises for a call in the wrong state."""

    code, exit_code, on_wire = "INVALID_STATE", EXIT_STATE, True


class Busy(CsError):
    """The fabric is held by a run; the message names the holder, since when, and what to do."""

    code, exit_code, on_wire = "BUSY", EXIT_BUSY, True


class PermissionDenied(CsError):
    """The caller's role may not do this, its key is unknown, or what it names is another's."""

    code, exit_code, on_wire = "PERMISSION_DENIED", EXIT_PERMISSION, True


class NotFound(CsError):
    code, exit_code, on_wire = "NOT_FOUND", EXIT_NOT_FOUND, True


class ReprogramForbidden(CsError, RuntimeError):
    """The fabric was already programmed in this run; a run programs it at most once. A
    RuntimeError too, as the vendor's "second compile" refusal is."""

    code, exit_code, on_wire = "REPROGRAM_FORBIDDEN", EXIT_STATE, True


class IncompatibleProgram(CsError):
    """The program was compiled for another system, execution mode or run mode."""

    code, exit_code, on_wire = "INCOMPATIBLE_PROGRAM", EXIT_STATE, True


class RunAborted(CsError):
    """The run was aborted (lease lapsed, forced standby, admin, Slurm, daemon restart, a fault);
    says why. `fault` names the fault that caused it (None for any other cause)."""

    code, exit_code, on_wire = "RUN_ABORTED", EXIT_STATE, True


class FaultActive(CsError):
    """Refused because a fault is active (a critical sensor or hardware fault, an emergency
    shutdown): the message names it and the health it implies; `fault` is its name."""

    code, exit_code, on_wire = "FAULT_ACTIVE", EXIT_STATE, True
    hint = "See `cs system fault list`; wait for it to clear, or have an admin clear it."
    api_step = 'Client.wait_for(health={"OK", "DEGRADED", "STANDBY"}) returns once no critical fault is active.'
    console_step = ("`cs system show` shows systemHealth; `cs events follow --event-type 'EventHealth*'` "
                    "prints the moment it changes.")


class TransitionFailed(CsError):
    """The requested transition was attempted and failed (an injected transition fault fired):
    its …Failed events are recorded, nothing else changed. `fault` names it."""

    code, exit_code, on_wire = "TRANSITION_FAILED", EXIT_STATE, True
    hint = "See `cs system fault list` and `cs events show`; clear the fault or retry."
    # The attempt itself is history (its events are committed) although the request is refused.
    keeps_change = True


class Internal(CsError):
    """A bug in csd: the details are in its log, never on the wire."""

    code, exit_code, on_wire = "INTERNAL", EXIT_INTERNAL, True
    hint = "This is a bug: the csd log has the details. The request may be retried."


# -- raised on the client side only ----------------------------------------------------------------


class Unreachable(CsError):
    """No answer from csd (not running, wrong endpoint, or too slow)."""

    code, exit_code = "UNREACHABLE", EXIT_UNREACHABLE


class NoCredentials(CsError):
    """No usable client key or server key, so csd cannot be asked at all."""

    code, exit_code = "NO_CREDENTIALS", EXIT_PERMISSION


class UsageError(CsError):
    """A command line `cs` cannot parse or may not run as given."""

    code, exit_code = "USAGE", EXIT_USAGE


class Cancelled(CsError):
    """The user answered "no" to a confirmation (or Ctrl-C at it, or in a menu)."""

    code, exit_code, asked_for = "CANCELLED", EXIT_CANCELLED, True


class Interrupted(CsError):
    """The user pressed Ctrl-C while cs waited; the message says what carries on without it."""

    code, exit_code, asked_for = "INTERRUPTED", EXIT_INTERRUPTED, True


class BadCheckpoint(CsError):
    """A file `cstorch.load` cannot read as a checkpoint: not HDF5, another program's HDF5,
    truncated or damaged. The message names the file (and the entry, when one is bad)."""

    code, exit_code = "BAD_CHECKPOINT", EXIT_USAGE
    hint = "Load a checkpoint written by cstorch.save, or restore this one from a copy."


class InputWorkerFailed(CsError):
    """An input worker of a cstorch run raised (the message carries its traceback), died, or went
    silent: the run it fed has been ended ABORTED with the same reason."""

    code, exit_code = "INPUT_WORKER_FAILED", EXIT_STATE
    hint = "Fix the input function (the worker's traceback is above) and start the script again."


# -- derived from the classes above ----------------------------------------------------------------

BY_CODE: dict[str, type[CsError]] = {cls.code: cls for cls in CsError.__subclasses__() if cls.on_wire}
WIRE_CODES = frozenset(BY_CODE)  # the closed set of codes a reply may carry


def from_wire(error: dict) -> CsError:
    """The exception a reply's `error` object stands for (an unknown code: Internal); the optional
    `fault` key (RUN_ABORTED, FAULT_ACTIVE, TRANSITION_FAILED) becomes its `.fault`."""
    cls = BY_CODE.get(error.get("code"), Internal)
    fault = error.get("fault")
    return cls(str(error.get("message", "")), str(error.get("hint", "")), fault if isinstance(fault, str) else None)
