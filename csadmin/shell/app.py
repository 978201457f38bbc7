"""The `cs>` read-eval-print loop: prompt with completion, history and a live toolbar; events
from other clients are printed above the prompt without disturbing the line being typed."""

from __future__ import annotations

from prompt_toolkit import PromptSession
from prompt_toolkit.patch_stdout import patch_stdout

from .. import errors
from ..cli import render
from ..cli.action_context import ActionContext
from ..cli.commands import ExitShell
from ..cli.grammar import Source
from ..cli.parse import parse, split
from ..cli.runner import run_line
from ..client import Client
from .completer import CommandCompleter
from .console import ShellConsole
from .history import shell_history
from .key_bindings import shell_key_bindings
from .live import LiveState
from .toolbar import toolbar_text
from .watcher import Watcher

BANNER = "CS-2 admin console. Type `help` for commands, TAB to complete, Ctrl-D to leave."


def announce_line(event: dict) -> str:
    by = (event.get("details", {}).get("by") or {}).get("name")
    injected = {"injected": True} if event.get("details", {}).get("injected") is True else {}
    return "» " + render.event_line({**event, "details": injected}) + (f"  (by {by})" if by else "")


def _changes_state(line: str) -> bool:
    try:
        return parse(split(line)).command.changes_state
    except errors.CsError:
        return False


def run_shell(client: Client, g, watch: bool = True) -> int:
    console = ShellConsole()
    context = ActionContext(client, console, g.output_format, g.timeout, g.key, getattr(g, "system", None))
    try:  # the endpoint the connection file names, not the default the client starts from
        endpoint = client.target()
    except errors.CsError:
        endpoint = client.endpoint  # the watcher says more once it can reach csd
    live = LiveState(endpoint)
    live.system = context.system
    kept: dict[Source, list[str]] = {}  # the `kept` sources' values for the system in use

    def fetch(source: Source) -> list[str]:
        if source not in kept:
            values = list(source.fetch(context))
            if not source.kept:
                return values
            kept[source] = values
        return kept[source]

    prompt = PromptSession(
        message=lambda: f"cs[{context.system}]> " if context.system else "cs> ",
        completer=CommandCompleter(fetch),
        complete_while_typing=False,
        history=shell_history(),
        bottom_toolbar=lambda: toolbar_text(live),
        key_bindings=shell_key_bindings(),
        refresh_interval=0.5,
    )
    watcher = None
    if watch:
        watcher = Watcher(
            lambda: context.client.sibling(timeout=min(g.timeout, 2.0), retries=0), live,
            lambda e: print(announce_line(e), flush=True), client.session, invalidate=lambda: prompt.app.invalidate(),
        )
        watcher.start()
    console.out(BANNER)
    switched: list[Client] = []  # clients `use` made (the first is main's, closed there)

    def switch_system(name: str, new: Client) -> None:
        for old in switched:
            old.close()
        switched[:] = [new]
        context.client, context.system = new, name
        live.switch(name, new.endpoint)
        kept.clear()
        if watcher is not None:
            watcher.retarget()

    context.switch_system = switch_system

    def read_line() -> str | None:
        # stdout is patched only while the prompt is up: the watcher's lines then go above
        # it. A command's own output is written directly, in order: through the patch it
        # would travel via a flush thread and could be lost when the next prompt ends.
        with patch_stdout(raw=True):
            try:
                return prompt.prompt()
            except KeyboardInterrupt:
                return ""  # Ctrl-C at the prompt clears the line
            except EOFError:
                return None

    def run(line: str) -> None:
        if watcher is not None:
            watcher.busy = True
        try:
            run_line(context, line)  # Ctrl-C during a command's waits cancels that wait only
        finally:
            if watcher is not None:
                if _changes_state(line):
                    try:
                        watcher.quiet_seq = context.client.system_show()["seq"]
                    except errors.CsError:
                        pass
                watcher.busy = False

    try:
        while True:
            # Ctrl-C can land anywhere, not only in a wait a command handles (e.g. while the
            # prompt is being put away, or between two calls): it never ends the shell.
            try:
                line = read_line()
                if line is None:
                    return errors.EXIT_OK
                run(line)
            except ExitShell:
                return errors.EXIT_OK
            except KeyboardInterrupt:
                if watcher is not None:
                    watcher.busy = False
                console.err("Interrupted.")
    finally:
        if watcher is not None:
            watcher.stop()
            # Before the client (and its context) closes: the watcher's calls time out within
            # this, and it closes its own sockets.
            watcher.join(timeout=min(g.timeout, 2.0) + 1.0)
        for other in switched:
            other.close()
