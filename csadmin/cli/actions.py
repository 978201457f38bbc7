"""What each command does, given a Session and its parsed line; each returns an exit code.

Actions talk to the daemon only through `csadmin.client` and to people only through the
session's console, so one-shot, script and shell use share every line here.
"""

from __future__ import annotations

from .. import errors
from ..client import Client
from . import render
from .commands import COMMANDS, options_of
from .parse import Parsed


class Session:
    """What every action needs: the client, the console, and the global output settings."""

    def __init__(self, client: Client, console, output_format: str = "text", timeout: float = 10.0):
        self.client = client
        self.console = console  # PlainConsole or the shell's console
        self.output_format = output_format
        self.timeout = timeout  # seconds past a transition's expected duration before giving up

    def json(self, parsed: Parsed) -> bool:
        return (parsed.options.get("output_format") or self.output_format) == "json"


class ExitShell(Exception):
    """Raised by `exit` / `quit`; the shell ends with exit code 0."""


def _confirm(s: Session, p: Parsed, question: str) -> None:
    if p.options.get("no_confirm"):
        return
    if not s.console.interactive:
        raise errors.UsageError(
            f"`{p.command.name}` changes the system and needs --no-confirm when not run interactively.",
            "Add --no-confirm to run it from a script.",
        )
    if not s.console.confirm(question):
        raise errors.Cancelled("Cancelled; nothing was changed.")


def _settle(s: Session, p: Parsed, result: dict, target: str) -> int:
    """Wait for a started transition to complete, showing progress; print the outcome."""
    as_json = s.json(p)
    if result["changed"]:
        snap = s.client.system_show()
        left = render.seconds_left(snap) or 0.0
        if not as_json:
            s.console.out(f"{result['message'].rstrip('.')} ({snap['state']}, about {left:.1f} s)…")

        def progress(snap: dict) -> None:
            remaining = render.seconds_left(snap)
            if remaining is not None and not as_json:
                s.console.progress(f"{snap['state']}: about {remaining:.1f} s left")

        snap = s.client.wait_for(state=target, timeout=left + s.timeout, on_progress=progress)
        message = f"System is ACTIVE in {snap['activeExecmode']}." if target == "ACTIVE" else "System is in STANDBY."
    else:
        snap = s.client.system_show()
        message = result["message"]
    if as_json:
        s.console.out(render.as_json({"message": message, "changed": result["changed"], "system": snap}))
    else:
        s.console.out(message)
    return errors.EXIT_OK


def system_show(s: Session, p: Parsed) -> int:
    snap = s.client.call("system.show", detailed=True) if p.options["detailed"] else s.client.system_show()
    s.console.out(render.as_json(snap) if s.json(p) else render.system_show(snap))
    return errors.EXIT_OK


def system_standby(s: Session, p: Parsed) -> int:
    _confirm(s, p, "This puts the system in standby. Do you want to proceed?")
    return _settle(s, p, s.client.system_standby(), "STANDBY")


def system_activate(s: Session, p: Parsed) -> int:
    mode = s.client.execmode_show()["execmode"]
    _confirm(s, p, f"This activates the system in {render.title(mode)} mode. Do you want to proceed?")
    return _settle(s, p, s.client.system_activate(), "ACTIVE")


def execmode_show(s: Session, p: Parsed) -> int:
    result = s.client.execmode_show()
    s.console.out(render.as_json(result) if s.json(p) else render.execmode_show(result))
    return errors.EXIT_OK


def execmode_setup(s: Session, p: Parsed) -> int:
    mode = p.options["mode"]
    if mode is None:
        if not s.console.interactive:
            raise errors.UsageError(
                "`config execmode setup` needs --mode when not run interactively.",
                "Use `config execmode setup --mode WEIGHT_STREAMING --no-confirm` (or PIPELINED).",
            )
        snap = s.client.system_show()
        if snap["state"] != "STANDBY":
            # Let the daemon refuse it: the rule and its message live there, once.
            s.client.execmode_setup(snap["configuredExecmode"])
        options = [("PIPELINED", "Pipelined"), ("WEIGHT_STREAMING", "Weight Streaming")]
        mode = s.console.choose("Select execution mode configuration:", options, default=snap["configuredExecmode"])
    else:
        _confirm(s, p, f"This sets the execution mode to {render.title(mode.upper().replace('-', '_'))} "
                       f"(taking effect on `system activate`). Do you want to proceed?")
    result = s.client.execmode_setup(mode)
    if s.json(p):
        s.console.out(render.as_json(result))
        return errors.EXIT_OK
    s.console.out(f"Selected execution mode configuration: ✔ {render.title(result['execmode'])}")
    if result["changed"]:
        s.console.out("It takes effect on `system activate`.")
    else:
        s.console.out(result["message"])
    return errors.EXIT_OK


def events_show(s: Session, p: Parsed) -> int:
    o = p.options
    events = s.client.events_show(event_type=o["event_type"], from_time=o["from_time"], max_count=o["max_count"])
    s.console.out(render.as_json({"events": events}) if s.json(p) else render.events(events))
    return errors.EXIT_OK


def audit_show(s: Session, p: Parsed) -> int:
    entries = s.client.audit_show(max_count=p.options["max_count"])
    s.console.out(render.as_json({"entries": entries}) if s.json(p) else render.audit(entries))
    return errors.EXIT_OK


def help(s: Session, p: Parsed) -> int:
    s.console.out(help_text(p.args))
    return errors.EXIT_OK


def help_text(words: list[str]) -> str:
    if words:
        wanted = " ".join(words)
        matches = [c for c in COMMANDS if c.name == wanted or c.name.startswith(wanted + " ")]
        if not matches:
            raise errors.UsageError(f"No command `{wanted}`.", "Type `help` for the list of commands.")
        blocks = []
        for c in matches:
            lines = [f"{c.name} — {c.help}"]
            if c.details:
                lines.append(f"  {c.details}")
            lines += [f"  {o.name}{' ' + o.metavar if o.takes_value else ''}: {o.help}" for o in options_of(c)]
            lines += [f"  alias: {' '.join(a)}" for a in c.aliases]
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)
    width = max(len(c.name) for c in COMMANDS)
    return "\n".join(f"  {c.name.ljust(width)}  {c.help}" for c in COMMANDS) + "\n\nhelp COMMAND shows a command's options."


def exit(s: Session, p: Parsed) -> int:
    raise ExitShell()
