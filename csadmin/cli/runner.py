"""Run one command line, or a script of them, turning every failure into its exit code."""

from __future__ import annotations

import shlex

from .. import errors
from . import actions, render
from .actions import ExitShell, Session
from .parse import parse, split


def report(s: Session, exc: errors.CsError) -> None:
    if s.output_format == "json":
        s.console.out(render.as_json({"error": {"code": exc.code, "message": exc.message, "hint": exc.hint}}))
    else:
        s.console.err(f"Error: {exc.message}" + (f"\n{exc.hint}" if exc.hint else ""))


def run_tokens(s: Session, tokens: list[str]) -> int:
    """Run one command; ExitShell passes through, every other failure becomes an exit code."""
    try:
        parsed = parse(tokens)
        return getattr(actions, parsed.command.action)(s, parsed)
    except ExitShell:
        raise
    except errors.CsError as exc:
        report(s, exc)
        return exc.exit_code
    except KeyboardInterrupt:
        s.console.err("Interrupted.")
        return errors.EXIT_INTERRUPTED


def run_line(s: Session, line: str) -> int:
    try:
        tokens = split(line)
    except errors.UsageError as exc:
        report(s, exc)
        return exc.exit_code
    return run_tokens(s, tokens) if tokens else errors.EXIT_OK


def script_commands(text: str) -> list[list[str]]:
    """Split a script (`-c` text or a file) into commands: one per line or per `;`, `#` comments."""
    commands = []
    for line in text.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        try:
            for token in lexer:
                if token == ";":
                    commands.append(current)
                    current = []
                else:
                    current.append(token)
        except ValueError as exc:
            raise errors.UsageError(f"Cannot parse script line {line!r}: {exc}.", "Check the quoting.") from None
        commands.append(current)
    return [c for c in commands if c]


def run_script(s: Session, text: str) -> int:
    """Run commands in order; the first failure stops the script and is its exit code."""
    try:
        commands = script_commands(text)
    except errors.CsError as exc:
        report(s, exc)
        return exc.exit_code
    for tokens in commands:
        try:
            code = run_tokens(s, tokens)
        except ExitShell:
            return errors.EXIT_OK
        if code != errors.EXIT_OK:
            return code
    return errors.EXIT_OK
