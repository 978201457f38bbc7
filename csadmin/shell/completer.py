"""Completion of the whole `cs` grammar from the command table: command words, option names,
option values (fixed ones from the table, live ones such as event types from the daemon)."""

from __future__ import annotations

from typing import Callable, Iterable

from prompt_toolkit.completion import Completer, Completion

from ..cli.commands import ARGUMENT_SOURCES, command_at, next_words, options_of

Providers = dict[str, Callable[[], Iterable[str]]]


def candidates(text: str, providers: Providers | None = None) -> tuple[str, list[str]]:
    """(the word being completed, what may replace it) for the line `text` up to the cursor."""
    providers = providers or {}
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
        values = _live(providers, opt.complete_from) if opt.complete_from else list(opt.values)
        return current, [v for v in values if v.startswith(current)]
    unused = [name for name in options if name not in rest]
    given = _positionals(rest, options)
    if len(given) < len(command.arguments) and not current.startswith("-"):
        source = ARGUMENT_SOURCES.get(command.arguments[len(given)], "")
        values = [v for v in _live(providers, source) if v.startswith(current)]
        return current, values + ([] if current else unused)
    if current and not current.startswith("-"):
        return current, []
    return current, [name for name in unused if name.startswith(current)]


def _live(providers: Providers, source: str) -> list[str]:
    if source not in providers:
        return []
    try:
        return list(providers[source]())
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
    def __init__(self, providers: Providers | None = None):
        self.providers = providers or {}

    def get_completions(self, document, complete_event):
        current, matches = candidates(document.text_before_cursor, self.providers)
        for match in matches:
            # A trailing space after a complete word lets the next TAB go straight on.
            yield Completion(match + " ", start_position=-len(current), display=match)
