"""The launchers' command lines: their own options, then `python SCRIPT ARGS…`, with the seeds'
`--mode` and `--cs_ip` taken out of the script's arguments (the launcher acts on them and hands
them to the script through its environment: csadmin/launch/__init__.py)."""

from __future__ import annotations

import functools
import sys

from csadmin import errors
from csadmin.shared.pipes import quiet_when_reader_gone

MODES = ("validate_only", "compile_only", "train", "eval")


def take_option(args: list[str], name: str) -> tuple[str | None, list[str]]:
    """Remove `name VALUE` / `name=VALUE` (the last one wins) from `args`; return (VALUE, rest)."""
    value, rest, i = None, [], 0
    while i < len(args):
        arg = args[i]
        if arg == name:
            if i + 1 >= len(args):
                raise errors.UsageError(f"{name} needs a value.", f"Give it as {name} VALUE.")
            value, i = args[i + 1], i + 2
            continue
        if arg.startswith(name + "="):
            value = arg[len(name) + 1:]
        else:
            rest.append(arg)
        i += 1
    return value, rest


def split_script(argv: list[str], interpreters: tuple[str, ...], usage: str) -> tuple[list[str], str, list[str]]:
    """(the launcher's options, the interpreter word, [SCRIPT, ARGS…]) from `argv`."""
    for i, arg in enumerate(argv):
        if arg in interpreters:
            script = argv[i + 1:]
            if not script:
                raise errors.UsageError(f"{arg} needs a script.", usage)
            return argv[:i], arg, script
    raise errors.UsageError(f"no {' or '.join(interpreters)} SCRIPT on the command line.", usage)


def mode_of(script_args: list[str]) -> tuple[str | None, list[str]]:
    """The seeds' `--mode` (None if not given) and the script's other arguments."""
    mode, rest = take_option(script_args, "--mode")
    if mode is not None and mode not in MODES:
        raise errors.UsageError(f"--mode {mode!r} is not a mode.", f"Use one of {', '.join(MODES)}.")
    return mode, rest


def help_asked(argv: list[str], usage: str, doc: str) -> int | None:
    """`-h`/`--help` (usage and the module's description on stdout: 0) or nothing at all (the
    usage on stderr: 2); None when there is a command line to run."""
    if argv and argv[0] not in ("-h", "--help"):
        return None
    print(usage + "\n\n" + doc.split("\n\n", 1)[1], file=sys.stdout if argv else sys.stderr)
    return 0 if argv else errors.EXIT_USAGE


def launcher(usage: str, doc: str):
    """Make `run(argv) -> int` a launcher's console-script `main(argv=None)`: argv defaults to the
    command line, `-h`/`--help` or no arguments at all answer through help_asked, and a reader
    that goes away ends it quietly (csadmin/shared/pipes.py)."""

    def decorate(run):
        @quiet_when_reader_gone
        @functools.wraps(run)
        def main(argv: list[str] | None = None) -> int:
            argv = sys.argv[1:] if argv is None else argv
            status = help_asked(argv, usage, doc)
            return status if status is not None else run(argv)

        return main

    return decorate
