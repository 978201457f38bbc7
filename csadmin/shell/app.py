"""The `cs>` read-eval-print loop."""

from __future__ import annotations

from prompt_toolkit import PromptSession

from ..cli.actions import ExitShell, Session
from ..cli.runner import run_line
from ..client import Client
from .console import ShellConsole

BANNER = "CS-2 admin console. Type `help` for commands, Ctrl-D to leave."


def run_shell(client: Client, g) -> int:
    console = ShellConsole()
    session = Session(client, console, g.output_format, g.timeout)
    prompt = PromptSession(message="cs> ")
    console.out(BANNER)
    while True:
        try:
            line = prompt.prompt()
        except KeyboardInterrupt:
            continue  # Ctrl-C clears the line
        except EOFError:
            return 0  # Ctrl-D
        try:
            run_line(session, line)
        except ExitShell:
            return 0
