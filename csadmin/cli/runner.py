"""Run one command line, or a script of them, turning every failure into its exit code."""

from __future__ import annotations

import shlex

from .. import errors
from . import render
from .session import Session
from .commands import ExitShell
from .parse import parse, split
from .render import shown


def report(s: Session, exc: errors.CsError, line: int | None = None, command: str = "") -> int:
    """Say what failed; in a script, `line` (and the `command` there) says where. Returns the
    failure's exit code."""
    if s.output_format == "json":
        error = {"code": exc.code, "message": exc.message, "hint": exc.hint}
        if line is not None:
            error.update(line=line, command=command)
        s.console.out(render.as_json({"error": error}))
    elif exc.asked_for:  # "n" or Ctrl-C: what the person did, not an error
        s.console.err(exc.message + (f"\n{exc.hint}" if exc.hint else ""))
    else:
        where = f" at line {line} (`{shown(command, 100)}`)" if line is not None else ""
        s.console.err(f"Error{where}: {exc.message}" + (f"\n{exc.hint}" if exc.hint else ""))
    return exc.exit_code


def run_tokens(s: Session, tokens: list[str], line: int | None = None) -> int:
    """Run one command; ExitShell passes through, every other failure becomes an exit code.
    `line`: where the command is in a script, for the error message."""
    try:
        parsed = parse(tokens)
        return parsed.command.action(s, parsed)
    except ExitShell:
        raise
    except errors.CsError as exc:
        return report(s, exc, line, shlex.join(tokens))
    except KeyboardInterrupt:  # outside a wait that says more (actions._settle)
        return report(s, errors.Interrupted("Interrupted."), line, shlex.join(tokens))


def run_line(s: Session, line: str) -> int:
    try:
        tokens = split(line)
    except errors.UsageError as exc:
        return report(s, exc)
    return run_tokens(s, tokens) if tokens else errors.EXIT_OK


def script_commands(text: str) -> list[tuple[int, list[str]]]:
    """Split a script (`-c` text or a file) into (line number, command): one per line or per
    `;`, `#` comments."""
    commands = []
    for number, line in enumerate(text.splitlines(), start=1):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        try:
            for token in lexer:
                if token == ";":
                    commands.append((number, current))
                    current = []
                else:
                    current.append(token)
        except ValueError as exc:
            raise errors.UsageError(f"Cannot parse script line {number} ({shown(line)!r}): {exc}.",
                                    "Check the quoting.") from None
        commands.append((number, current))
    return [(number, c) for number, c in commands if c]


def run_script(s: Session, text: str) -> int:
    """Run commands in order; the first failure stops the script and is its exit code."""
    try:
        commands = script_commands(text)
    except errors.CsError as exc:
        return report(s, exc)
    for number, tokens in commands:
        try:
            code = run_tokens(s, tokens, line=number)
        except ExitShell:
            return errors.EXIT_OK
        if code != errors.EXIT_OK:
            return code
    return errors.EXIT_OK
