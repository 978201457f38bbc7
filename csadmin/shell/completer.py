"""Completion of the whole `cs` grammar from the command table: command words, option names,
option values (fixed ones from the table, live ones such as event types from the daemon: the
table names each live source, csadmin/cli/sources.py, and `live` fetches it)."""

from __future__ import annotations

from typing import Callable, Iterable

from prompt_toolkit.completion import Completer, Completion

from ..cli.commands import command_at, next_words, options_of
from ..cli.grammar import Source

Live = Callable[[Source], Iterable[str]]  # a source's values now (the shell's: csadmin/shell/app.py)


def _nothing_live(source: Source) -> list[str]:
    return []


def candidates(text: str, live: Live = _nothing_live) -> tuple[str, list[str]]:
    """(the word being completed, what may replace it) for the line `text` up to the cursor."""
    words = text.split()
    current = "" if not words or text[-1:].isspace() else words[-1]
    done = words if not current else words[:-1]
    command, used = command_at(done)

    if command is None:
        return current, [w for w in next_words(tuple(done)) if w.startswith(current)]
    if command.takes_command:  # help takes a command name
        return current, [w for w in next_words(tuple(done[used:])) if w.startswith(current)]

    options = {o.name: o for o in options_of(command)}
    rest = done[used:]
    if rest and rest[-1] in options and options[rest[-1]].takes_value:
        opt = options[rest[-1]]
        values = _live(live, opt.complete_from) if opt.complete_from else list(opt.values)
        return current, [v for v in values if v.startswith(current)]
    unused = [name for name in options if name not in rest]
    given = _positionals(rest, options)
    if len(given) < len(command.arguments) and not current.startswith("-"):
        values = [v for v in _live(live, command.arguments[len(given)].complete_from) if v.startswith(current)]
        return current, values + ([] if current else unused)
    if current and not current.startswith("-"):
        return current, []
    return current, [name for name in unused if name.startswith(current)]


def _live(live: Live, source: Source | None) -> list[str]:
    if source is None:
        return []
    try:
        return list(live(source))
    except Exception:  # a completion must never break the line being typed
        return []


def _positionals(rest: list[str], options: dict) -> list[str]:
    """The positional arguments among `rest`, skipping options and their values."""
    given, skip = [], False
    for token in rest:
        if skip:
            skip = False
        elif token in options:
            skip = options[token].takes_value
        elif not token.startswith("-"):
            given.append(token)
    return given


class CommandCompleter(Completer):
    def __init__(self, live: Live = _nothing_live):
        self.live = live

    def get_completions(self, document, complete_event):
        current, matches = candidates(document.text_before_cursor, self.live)
        for match in matches:
            # A trailing space after a complete word lets the next TAB go straight on.
            yield Completion(match + " ", start_position=-len(current), display=match)
