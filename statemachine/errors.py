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
