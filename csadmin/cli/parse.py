"""Turn a command line into (Command, options) using the table, or raise UsageError saying why."""

from __future__ import annotations

import shlex
from ..errors import UsageError
from .commands import all_names, command_at, next_words, options_of
from .grammar import Command, Parsed
from .render import ECHO_CHARS, shown


def split(line: str) -> list[str]:
    try:
        return shlex.split(line, comments=True)
    except ValueError as exc:
        raise UsageError(f"Cannot parse the line: {exc}.", "Check the quoting.") from None


HELP_FLAGS = ("-h", "--help")


def json_asked(tokens: list[str]) -> bool:
    """Whether `--output-format json` is anywhere among `tokens` (read from the tokens, so a line
    that does not parse still answers in JSON)."""
    return any(token == "--output-format=json" or (token == "--output-format" and tokens[i + 1:i + 2] == ["json"])
               for i, token in enumerate(tokens))


def parse(tokens: list[str]) -> Parsed:
    """The command `tokens` name, with its options and arguments. `-h`/`--help` anywhere asks for
    the help of the command or group before it (`system standby --help`, `system --help`)."""
    if any(token in HELP_FLAGS for token in tokens):
        parsed = _help_for([token for token in tokens if token not in HELP_FLAGS])
        return parsed._replace(options={"output_format": "json" if json_asked(tokens) else None})
    command, n = command_at(tokens)
    if command is not None:
        return Parsed(command, *_parse_options(command, tokens[n:]))
    prefix = _group(tokens)
    if len(prefix) == len(tokens) and prefix:
        choices = ", ".join(next_words(prefix))
        raise UsageError(f"Incomplete command `{' '.join(prefix)}`: follow it with one of {choices}.",
                         f"See `help {' '.join(prefix)}`.")
    raise _unknown(prefix, tokens[len(prefix)] if tokens else "")


def check(parsed: Parsed, interactive: bool) -> None:
    """Refuse (UsageError) what the line's grammar allows but cannot run as given: a change
    with no one to confirm it and no --no-confirm, and the command's own checks (its `check`).
    Sends nothing; a script is checked this way, every line, before its first line runs."""
    command = parsed.command
    if command.changes_state and not interactive and not parsed.options.get("no_confirm"):
        raise UsageError(
            f"`{command.name}` changes the system and needs --no-confirm when not run interactively.",
            "Add --no-confirm to run it from a script.",
        )
    if command.check is not None:
        command.check(parsed, interactive)


def _group(tokens: list[str]) -> tuple[str, ...]:
    """The longest run of leading `tokens` that names a group of commands (`system fault`)."""
    table = all_names()
    prefix: tuple[str, ...] = ()
    for token in tokens:
        if not next_words(prefix + (token,)) and tuple(prefix + (token,)) not in table:
            break
        prefix += (token,)
    return prefix


def _unknown(group: tuple[str, ...], word: str) -> UsageError:
    """`word` is no command (after `group`, e.g. `system stanby`): say so, with the nearest one."""
    import difflib  # error path only

    close = difflib.get_close_matches(word[:ECHO_CHARS], next_words(group), n=1)
    if not group:
        hint = f"Did you mean `{close[0]}`? " if close else ""
        return UsageError(f"Unknown command `{shown(word)}`.", f"{hint}Type `help` for the list of commands.")
    name = " ".join(group)
    hint = f"Did you mean `{name} {close[0]}`? " if close else ""
    return UsageError(f"`{name}` has no command `{shown(word)}`; it takes {', '.join(next_words(group))}.",
                      f"{hint}See `help {name}`.")


def _help_for(words: list[str]) -> Parsed:
    """`help` for the command or group `words` start with (what follows it, options and
    arguments, is ignored: `system standby --force --help` is standby's help)."""
    help_command = all_names()[("help",)]
    if not words:
        return Parsed(help_command, {}, [])
    command, n = command_at(words)
    if command is not None and command.takes_command and len(words) > n:  # `help system --help`
        return _help_for(words[n:])
    if command is not None:
        return Parsed(help_command, {}, list(command.words))
    group = _group(words)
    if not group:
        raise _unknown((), words[0])
    if len(group) < len(words) and not words[len(group)].startswith("-"):
        raise _unknown(group, words[len(group)])
    return Parsed(help_command, {}, list(group))


def _parse_options(command: Command, tokens: list[str]) -> tuple[dict, list[str]]:
    known = {opt.name: opt for opt in options_of(command)}
    options: dict = {opt.dest: (None if opt.takes_value else False) for opt in known.values()}
    args: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not token.startswith("--"):
            args.append(token)
            i += 1
            continue
        name, eq, value = token.partition("=")
        opt = known.get(name)
        if opt is None:
            import difflib  # error path only

            close = difflib.get_close_matches(name[:ECHO_CHARS], list(known), n=1)
            hint = f"Did you mean {close[0]}?" if close else f"See `help {command.name}`."
            raise UsageError(f"`{command.name}` has no option {shown(name)}.", hint)
        if not opt.takes_value:
            if eq:
                raise UsageError(f"{shown(name)} takes no value.")
            options[opt.dest] = True
            i += 1
            continue
        if not eq:
            if i + 1 >= len(tokens):
                raise UsageError(f"{name} needs a value ({opt.metavar}).")
            value = tokens[i + 1]
            i += 1
        i += 1
        if opt.choices and value not in opt.values:
            raise UsageError(f"{name} must be one of {', '.join(opt.values)}, not {shown(value)!r}.")
        if opt.integer:
            try:
                value = int(value)
            except ValueError:
                raise UsageError(f"{name} needs a whole number, not {shown(value)!r}.") from None
        if opt.number:
            try:
                value = float(value)
            except ValueError:
                raise UsageError(f"{name} needs a number of seconds, not {shown(value)!r}.") from None
        if opt.parse is not None:  # checked here, sent as typed (csd parses it again)
            try:
                opt.parse(value)
            except ValueError as exc:
                raise UsageError(f"{name}: {exc}.", f"See `{command.name} --help`.") from None
        options[opt.dest] = value
    if not command.takes_command:
        wanted = len(command.arguments)
        if len(args) > wanted:
            what = "no argument" if not wanted else f"only {' '.join(a.metavar for a in command.arguments)}, not"
            raise UsageError(f"`{command.name}` takes {what} {shown(args[wanted])!r}.", f"See `help {command.name}`.")
        # An argument written in brackets ("[NAME]") may be left out.
        if len(args) < sum(1 for a in command.arguments if not a.optional):
            raise UsageError(
                f"`{command.name}` needs {' '.join(a.metavar for a in command.arguments[len(args):])}.",
                f"Usage: {command.usage}",
            )
    return options, args
