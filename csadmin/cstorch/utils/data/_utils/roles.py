"""Processes that only run the script's input function: an input worker task of a csrun_wse job
(remote.py) and a cs_input_analyzer task (input_analysis.py).

`python -m csadmin.cstorch` asks `from_environment()` which role its process has (None: it trains,
as usual) and gives it to the backend (`backend.input_role`). In such a process the script runs
as written up to its `cstorch.utils.data.DataLoader(input_fn, …)`, whose constructor raises
InputTaken with the input function and its arguments: that stops the script there, and the
runner — not the constructor — serves the role with them and ends with the role's status. A
script run any other way never meets a role: constructing a DataLoader never ends a process.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from . import input_analysis, remote


class InputTaken(BaseException):
    """The script of an input-only process reached its DataLoader (not an error: a BaseException,
    so that the script's own `except Exception` does not swallow it on the way out)."""

    def __init__(self, input_fn, args: tuple, kwargs: dict):
        super().__init__("the input function was taken by this process's input role")
        self.input_fn, self.args, self.kwargs = input_fn, args, kwargs


class InputRole(NamedTuple):
    name: str  # what the process is, for messages
    serve: Callable  # serve(input_fn, args, kwargs, backend) -> exit status


def from_environment() -> InputRole | None:
    """The role the launchers gave this process through its environment, if any."""
    if input_analysis.requested():
        return InputRole("cs_input_analyzer task", input_analysis.measure)
    if remote.worker_requested():
        return InputRole("csrun_wse input worker", remote.serve)
    return None
