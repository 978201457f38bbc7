"""What every action gets: the client, the console, and the global output settings."""

from __future__ import annotations

from typing import Callable

from ..client import Client


class Session:
    """What every action needs: the client, the console, and the global output settings."""

    def __init__(self, client: Client, console, output_format: str = "text", timeout: float = 10.0,
                 key: str | None = None, system: str | None = None):
        self.client = client
        self.console = console  # PlainConsole or the shell's console
        self.output_format = output_format
        self.timeout = timeout  # seconds past a transition's expected duration before giving up
        self.key = key  # the --key given, for the inventory's systems without a key of their own
        self.system = system  # the inventory system `client` talks to (--system, $CS_SYSTEM, `use`), if named
        #: set by the shell: `use NAME` hands it the new system's name and client
        self.switch_system: Callable[[str, Client], None] | None = None

    def json(self, parsed) -> bool:
        """Whether to answer `parsed` (a Parsed command line) in JSON."""
        return (parsed.options.get("output_format") or self.output_format) == "json"
