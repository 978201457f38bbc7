"""Client-side exceptions: one class per wire error code, and the exit code each maps to.

`cs` exits with the code of the error class (README, "Exit codes"); runtimes catch the classes.
"""

from __future__ import annotations

# Exit codes, one per error class. Never 0 on failure.
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


class CsError(Exception):
    """Base of every error csadmin raises; `code` is the wire code, `exit_code` what `cs` returns."""

    code = "INTERNAL"
    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} {self.hint}".strip() if self.hint else self.message


class BadRequest(CsError):
    code, exit_code = "BAD_REQUEST", EXIT_USAGE


class UnsupportedVersion(CsError):
    code, exit_code = "UNSUPPORTED_VERSION", EXIT_INTERNAL


class UnknownOp(CsError):
    code, exit_code = "UNKNOWN_OP", EXIT_USAGE


class InvalidArgument(CsError):
    code, exit_code = "INVALID_ARGUMENT", EXIT_USAGE


class InvalidState(CsError):
    code, exit_code = "INVALID_STATE", EXIT_STATE


class Busy(CsError):
    code, exit_code = "BUSY", EXIT_BUSY


class PermissionDenied(CsError):
    code, exit_code = "PERMISSION_DENIED", EXIT_PERMISSION


class NotFound(CsError):
    code, exit_code = "NOT_FOUND", EXIT_NOT_FOUND


class ReprogramForbidden(CsError):
    code, exit_code = "REPROGRAM_FORBIDDEN", EXIT_STATE


class IncompatibleProgram(CsError):
    code, exit_code = "INCOMPATIBLE_PROGRAM", EXIT_STATE


class RunAborted(CsError):
    code, exit_code = "RUN_ABORTED", EXIT_STATE


class Internal(CsError):
    code, exit_code = "INTERNAL", EXIT_INTERNAL


class Unreachable(CsError):
    """No answer from the daemon (not running, wrong endpoint, or too slow): never on the wire."""

    code, exit_code = "UNREACHABLE", EXIT_UNREACHABLE


class NoCredentials(CsError):
    """No usable client key or server key, so csd cannot be asked at all (client-side)."""

    code, exit_code = "NO_CREDENTIALS", EXIT_PERMISSION


class UsageError(CsError):
    """A command line `cs` cannot parse or may not run as given (client-side)."""

    code, exit_code = "USAGE", EXIT_USAGE


class Cancelled(CsError):
    code, exit_code = "CANCELLED", EXIT_CANCELLED


BY_CODE: dict[str, type[CsError]] = {
    cls.code: cls
    for cls in (
        BadRequest, UnsupportedVersion, UnknownOp, InvalidArgument, InvalidState, Busy,
        PermissionDenied, NotFound, ReprogramForbidden, IncompatibleProgram, RunAborted, Internal,
    )
}


def from_wire(error: dict) -> CsError:
    cls = BY_CODE.get(error.get("code"), Internal)
    return cls(str(error.get("message", "")), str(error.get("hint", "")))
