"""What a command line must be before anything is sent: the command table's `check`s
(commands.py; parse.check runs them), so a script is refused whole, before its first line runs,
for a line csd would never see right (a missing --mode, NAME and --all together, a scenario file
that cannot be read).
"""

from __future__ import annotations

from .. import errors
from . import render
from .grammar import Parsed


def fault_clear(p: Parsed, interactive: bool) -> None:
    if bool(p.options.get("all")) == bool(p.args):
        raise errors.UsageError("Name the fault to clear, or give --all (not both).",
                                "Usage: system fault clear NAME | system fault clear --all")


def execmode_setup(p: Parsed, interactive: bool) -> None:
    if p.options["mode"] is None and not interactive:
        raise errors.UsageError(
            "`config execmode setup` needs --mode when not run interactively.",
            "Use `config execmode setup --mode WEIGHT_STREAMING --no-confirm` (or PIPELINED).",
        )


def fault_scenario(p: Parsed, interactive: bool) -> None:
    scenario_text(p.args[0])  # a file that cannot be read stops a script before its first line


def scenario_text(path: str) -> str:
    """The scenario file's text, held to the limits csd holds it to (csadmin/shared/scenario_file.py),
    before anything is sent."""
    from ..shared import scenario_file  # only for `system fault scenario`: not on every one-shot's path

    return scenario_file.read(path, shown=repr(render.shown_path(path)))
