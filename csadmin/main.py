"""`cs`: the CS-2 admin console.

    cs                         the interactive cs> shell
    cs system show             one command, then exit (scripts)
    cs -c "cmd; cmd"           a script; also `cs < file`
    cs --embedded              a private csd in a temp dir, with the shell on it

The program above both ways of using the console: cli/ (one-shot commands and scripts) and
shell/ (the interactive shell, which runs on cli/). It stays light: the shell (prompt_toolkit)
is imported only when a shell is opened.
"""

from __future__ import annotations

import contextlib
import os
import sys

from . import __version__, errors
from .cli.commands import help_text
from .cli.console import PlainConsole
from .cli.runner import run_script, run_tokens
from .cli.session import Session
from .client import Client

USAGE = """usage: cs [--connect FILE] [--key FILE] [--endpoint URL --server-key KEY] [--timeout S]
          [--output-format text|json] [--embedded] [-c "CMD; CMD" | COMMAND [OPTIONS]]

The CS-2 admin console. With no command and a terminal, opens the interactive cs> shell;
with stdin not a terminal, runs the commands it reads, stopping at the first failure.

global options:
  --connect FILE         csd's connection file (default: $CS_CONNECT, else csd.json in csd's runtime dir)
  --key FILE             your secret key file from `csd keys add` (default: $CS_KEY, else
                         ~/.config/cs/client.key_secret)
  --endpoint URL         csd request socket (default: $CS_ENDPOINT or the connection file's)
  --server-key KEY       csd's public key, for an --endpoint without a connection file ($CS_SERVER_KEY)
  --timeout S            seconds to wait for an answer, and past a transition's expected end (default 10)
  --output-format F      text (default) or json
  -c CMDS                run these commands (separated by ';' or newlines) and exit
  --embedded             start a private csd in a temp dir and use it (stopped on exit)
  --version              print the version and exit

commands:
"""


class GlobalOptions:
    endpoint: str | None = None
    connect: str | None = None
    key: str | None = None
    server_key: str | None = None
    timeout: float = 10.0
    output_format: str = "text"
    script: str | None = None
    embedded: bool = False


def parse_globals(argv: list[str]) -> tuple[GlobalOptions, list[str]]:
    g = GlobalOptions()
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        name, eq, value = argv[i].partition("=")
        if name in ("-h", "--help"):
            raise SystemExit(_print_usage())
        if name == "--version":
            print(f"cs {__version__}")
            raise SystemExit(0)
        if name == "--embedded":
            g.embedded = True
            i += 1
            continue
        if name not in ("--endpoint", "--connect", "--key", "--server-key", "--timeout", "--output-format", "-c"):
            break  # a command's option, e.g. `cs --output-format json system show` keeps working
        if not eq:
            if i + 1 >= len(argv):
                raise errors.UsageError(f"{name} needs a value.", "See `cs --help`.")
            value = argv[i + 1]
            i += 1
        i += 1
        if name in ("--endpoint", "--connect", "--key", "--server-key"):
            setattr(g, name[2:].replace("-", "_"), value)
        elif name == "--timeout":
            try:
                g.timeout = float(value)
            except ValueError:
                raise errors.UsageError(f"--timeout needs a number of seconds, not {value!r}.") from None
            if g.timeout <= 0:
                raise errors.UsageError("--timeout must be more than 0.")
        elif name == "--output-format":
            if value not in ("text", "json"):
                raise errors.UsageError(f"--output-format must be text or json, not {value!r}.")
            g.output_format = value
        else:
            g.script = value
    return g, argv[i:]


def _print_usage() -> int:
    print(USAGE + help_text([]))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        g, rest = parse_globals(argv)
    except errors.UsageError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return exc.exit_code
    try:
        with _daemon(g):
            client = Client(g.endpoint, timeout=g.timeout, connect=g.connect, key=g.key, server_key=g.server_key)
            try:
                return _run(g, rest, client)
            finally:
                client.close()
    except errors.CsError as exc:
        print(f"Error: {exc.message}" + (f"\n{exc.hint}" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return errors.EXIT_INTERRUPTED
    except BrokenPipeError:
        return _reader_gone()


def _reader_gone() -> int:
    """Whoever read our output went away (`cs events show | head`): stop quietly, as Unix tools
    do. stdout is pointed at /dev/null so the interpreter's last flush of what is still buffered
    cannot fail again on the way out (the recipe in the `signal` module's documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return errors.EXIT_BROKEN_PIPE


@contextlib.contextmanager
def _daemon(g: GlobalOptions):
    if not g.embedded:
        yield
        return
    from .cli.embedded import embedded_daemon

    with embedded_daemon() as (connection_file, key_file):
        g.endpoint, g.server_key, g.connect, g.key = None, None, connection_file, key_file
        # So a runtime (examples/train_loop.py) or a second shell can use the same private csd.
        print(f"Private csd for this session; to reach it from elsewhere:\n"
              f"  export CS_CONNECT={connection_file} CS_KEY={key_file}\n"
              "It stops when you leave.", file=sys.stderr)
        yield


def _run(g: GlobalOptions, rest: list[str], client: Client) -> int:
    stdin_is_tty = sys.stdin.isatty()
    if rest:
        session = Session(client, PlainConsole(interactive=stdin_is_tty), g.output_format, g.timeout)
        return run_tokens(session, rest)
    if g.script is not None:
        return run_script(Session(client, PlainConsole(interactive=False), g.output_format, g.timeout), g.script)
    if not stdin_is_tty:
        session = Session(client, PlainConsole(interactive=False), g.output_format, g.timeout)
        return run_script(session, sys.stdin.read())
    from .shell.app import run_shell
    from .shell.ctrl_d import ctrl_d_as_a_key
    from .shell.foreground import own_foreground_group

    with own_foreground_group(), ctrl_d_as_a_key():
        return run_shell(client, g)
