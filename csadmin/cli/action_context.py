"""What every action gets (an ActionContext): the client, the console, and the global output
settings. Not a session: "session" is the connection csd names in `whoami` and `details.by`."""

from __future__ import annotations

from typing import Callable

from ..client import Client
from . import render


class ActionContext:
    """What every action needs: the client, the console, and the global output settings."""

    def __init__(self, client: Client, console, output_format: str = "text", timeout: float = 10.0,
                 key: str | None = None, system: str | None = None):
        self.client = client
        self.console = console  # PlainConsole or the shell's console
        self.output_format = output_format
        self.timeout = timeout  # seconds past a transition's expected duration before giving up
        self.json_lines = False  # a script's JSON: one document per line (JSON Lines), not pretty-printed
        self.key = key  # the --key given, for the inventory's systems without a key of their own
        self.system = system  # the inventory system `client` talks to (--system, $CS_SYSTEM, `use`), if named
        #: set by the shell: `use NAME` hands it the new system's name and client
        self.switch_system: Callable[[str, Client], None] | None = None

    def json(self, parsed) -> bool:
        """Whether to answer `parsed` (a Parsed command line) in JSON."""
        return (parsed.options.get("output_format") or self.output_format) == "json"

    def as_json(self, obj) -> str:
        """`obj` as the JSON output of one command: one line in a script, indented otherwise."""
        return render.compact_json(obj) if self.json_lines else render.as_json(obj)
