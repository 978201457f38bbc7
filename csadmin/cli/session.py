"""What every action gets: the client, the console, and the global output settings."""

from __future__ import annotations

from ..client import Client


class Session:
    """What every action needs: the client, the console, and the global output settings."""

    def __init__(self, client: Client, console, output_format: str = "text", timeout: float = 10.0):
        self.client = client
        self.console = console  # PlainConsole or the shell's console
        self.output_format = output_format
        self.timeout = timeout  # seconds past a transition's expected duration before giving up

    def json(self, parsed) -> bool:
        """Whether to answer `parsed` (a Parsed command line) in JSON."""
        return (parsed.options.get("output_format") or self.output_format) == "json"
