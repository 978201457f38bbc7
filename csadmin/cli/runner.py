"""Run one command line, or a script of them, turning every failure into its exit code.

A script is parsed and checked whole (parse.check: commands, options, values, --no-confirm)
before its first line runs: a mistake on line 5 must not leave a procedure half done. With JSON
asked for anywhere on a line, every outcome of it is a JSON object on stdout; a script's are one
per line (JSON Lines, docs/cli.md).
"""

from __future__ import annotations

import shlex

from .. import errors
from .commands import ExitShell
from .grammar import Parsed
from .parse import check, json_asked, parse, split
from .render import shown
from .action_context import ActionContext
from .terms import in_console_terms


def wants_json(s: ActionContext, tokens: list[str]) -> bool:
    """Whether this line's outcome is JSON: asked for globally or on the line."""
    return s.output_format == "json" or json_asked(tokens)


def report(s: ActionContext, exc: errors.CsError, line: int | None = None, command: str = "",
           as_json: bool = False) -> int:
    """Say what failed; in a script, `line` (and the `command` there) says where. Returns the
    failure's exit code. The hint is the console's (errors.CsError.console_hint)."""
    hint = exc.console_hint()
    if as_json or s.output_format == "json":
        error = {"code": exc.code, "message": exc.message, "hint": hint}
        if line is not None:
            error.update(line=line, command=command)
        s.console.out(s.as_json({"error": error}))
    elif exc.asked_for:  # "n" or Ctrl-C: what the person did, not an error
        s.console.err(exc.message + (f"\n{hint}" if hint else ""))
    else:
        where = f" at line {line} (`{shown(command, 60)}`)" if line is not None else ""
        error = s.console.err_paint.error("Error")
        s.console.err(f"{error}{where}: {exc.message}" + (f"\n{hint}" if hint else ""))
    return exc.exit_code


def _checked(s: ActionContext, tokens: list[str]) -> Parsed:
    parsed = parse(tokens)
    check(parsed, s.console.interactive)
    return parsed


def _run(s: ActionContext, parsed: Parsed, tokens: list[str], line: int | None) -> int:
    """Carry out a parsed, checked line; ExitShell passes through, every other failure becomes
    an exit code (csd's refusals said in the console's terms)."""
    as_json = wants_json(s, tokens)
    try:
        return parsed.command.action(s, parsed)
    except ExitShell:
        raise
    except errors.CsError as exc:
        return report(s, in_console_terms(exc, parsed.command), line, shlex.join(tokens), as_json)
    except KeyboardInterrupt:
        return report(s, errors.Interrupted("Interrupted."), line, shlex.join(tokens), as_json)


def run_tokens(s: ActionContext, tokens: list[str], line: int | None = None) -> int:
    """Run one command; ExitShell passes through, every other failure becomes an exit code.
    `line`: where the command is in a script, for the error message."""
    try:
        parsed = _checked(s, tokens)
    except errors.CsError as exc:
        return report(s, exc, line, shlex.join(tokens), wants_json(s, tokens))
    except KeyboardInterrupt:  # outside a wait that says more (actions._settle)
        return report(s, errors.Interrupted("Interrupted."), line, shlex.join(tokens), wants_json(s, tokens))
    return _run(s, parsed, tokens, line)


def run_line(s: ActionContext, line: str) -> int:
    try:
        tokens = split(line)
    except errors.UsageError as exc:
        return report(s, exc)
    return run_tokens(s, tokens) if tokens else errors.EXIT_OK


def script_commands(text: str) -> tuple[list[tuple[int, list[str]]], list[tuple[int, str, errors.CsError]]]:
    """Split a script (`-c` text or a file) into (line number, command): one per line or per
    `;`, `#` comments; and the lines that cannot be split (number, text, error)."""
    commands, bad = [], []
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
            bad.append((number, line, errors.UsageError(f"Cannot parse the line: {exc}.", "Check the quoting.")))
            continue
        commands.append((number, current))
    return [(number, c) for number, c in commands if c], bad


def run_script(s: ActionContext, text: str) -> int:
    """Check every line, then run them in order. Any line that does not parse or check: each is
    reported with its number, nothing runs, exit 2. Otherwise the first failure stops the script
    and is its exit code."""
    s.json_lines = True
    commands, bad = script_commands(text)
    checked: list[tuple[int, Parsed, list[str]]] = []
    mistakes = [(number, shown(line, 100), exc) for number, line, exc in bad]
    for number, tokens in commands:
        try:
            checked.append((number, _checked(s, tokens), tokens))
        except errors.CsError as exc:
            mistakes.append((number, shlex.join(tokens), exc))
    if mistakes:
        as_json = any(wants_json(s, tokens) for _, tokens in commands)
        mistakes.sort(key=lambda m: m[0])
        for number, command, exc in mistakes:
            report(s, exc, number, command, as_json)
        return report(s, errors.UsageError(f"Nothing was run: fix the script's {len(mistakes)} mistake(s) first."),
                      as_json=as_json)
    for number, parsed, tokens in checked:
        try:
            code = _run(s, parsed, tokens, number)
        except ExitShell:
            return errors.EXIT_OK
        if code != errors.EXIT_OK:
            return code
    return errors.EXIT_OK

