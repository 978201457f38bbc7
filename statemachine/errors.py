"""Refusals raised by the model.

Each carries a stable UPPER_SNAKE code (a member of the wire protocol's closed set; a test keeps
the two in step), a message saying what happened and a hint saying what to do next.
"""


class Refused(Exception):
    """A request the model will not carry out in its current state."""

    code = "INVALID_STATE"

    def __init__(self, message: str, hint: str = ""):
        super().__init__(message)
        self.message = message
        self.hint = hint


class InvalidState(Refused):
    code = "INVALID_STATE"


class InvalidArgument(Refused):
    code = "INVALID_ARGUMENT"


class Busy(Refused):
    """The fabric is held by a run; the message names the holder, since when, and what to do."""

    code = "BUSY"


class NotFound(Refused):
    code = "NOT_FOUND"


class PermissionDenied(Refused):
    """The request names something that belongs to another caller (e.g. another client's run)."""

    code = "PERMISSION_DENIED"


class ReprogramForbidden(Refused):
    """The fabric was already programmed in this run; a run programs it at most once."""

    code = "REPROGRAM_FORBIDDEN"


class IncompatibleProgram(Refused):
    """The program was compiled for another system, execution mode or run mode."""

    code = "INCOMPATIBLE_PROGRAM"


class RunAborted(Refused):
    """The run was aborted (lease lapsed, forced standby, admin, daemon restart); says why."""

    code = "RUN_ABORTED"
