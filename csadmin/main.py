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
import sys

from . import __version__, errors
from .cli import render
from .cli.action_context import ActionContext
from .cli.commands import COMMANDS, GLOBAL_OPTIONS, ExitShell, options_of
from .cli.console import PlainConsole
from .cli.parse import json_asked
from .cli.runner import run_script, run_tokens
from .client import Client
from .shared.pipes import reader_gone

USAGE = """usage: cs [--system NAME] [--connect FILE] [--key FILE] [--endpoint URL --server-key KEY] [--timeout S]
          [--output-format text|json] [--embedded] [-c "CMD; CMD" | COMMAND [OPTIONS]]

The CS-2 admin console. With no command and a terminal, opens the interactive cs> shell;
with stdin not a terminal, runs the commands it reads, stopping at the first failure.

global options:
{global_options}

commands:
"""


TAKING_VALUES = frozenset(o.name for o in GLOBAL_OPTIONS if o.takes_value)


class GlobalOptions:
    endpoint: str | None = None
    connect: str | None = None
    key: str | None = None
    server_key: str | None = None
    timeout: float = 10.0
    output_format: str = "text"
    script: str | None = None
    embedded: bool = False
    system: str | None = None
    system_key: str | None = None  # the inventory's key for that system (a --key typed beats it)


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
        if name not in TAKING_VALUES:
            break  # a command's option, e.g. `cs --output-format json system show` keeps working
        if not eq:
            if i + 1 >= len(argv):
                raise errors.UsageError(f"{name} needs a value.", "See `cs --help`.")
            value = argv[i + 1]
            i += 1
        i += 1
        if name in ("--endpoint", "--connect", "--key", "--server-key", "--system"):
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
    codes = "\n".join(f"  {code:<3}  {meaning}" for code, meaning in errors.EXIT_CODES)
    options = "\n".join(f"  {(o.name + ' ' + o.metavar if o.takes_value else o.name):<22}  {o.help}"
                        for o in GLOBAL_OPTIONS)
    from .cli.help import help_text  # only for `cs --help`

    print(USAGE.format(global_options=options) + help_text(COMMANDS, options_of, []) + "\n\nexit codes:\n" + codes)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        g, rest = parse_globals(argv)
    except errors.UsageError as exc:
        return _fail(exc, argv)
    try:
        with _daemon(g):
            _named_system(g)
            client = Client(g.endpoint, timeout=g.timeout, connect=g.connect, key=g.key or g.system_key,
                            server_key=g.server_key)
            try:
                return _run(g, rest, client)
            finally:
                client.close()
    except errors.CsError as exc:
        return _fail(exc, argv)
    except KeyboardInterrupt:
        return errors.EXIT_INTERRUPTED
    except BrokenPipeError:
        return reader_gone()


def _fail(exc: errors.CsError, argv: list[str]) -> int:
    """Say why `cs` could not start; as a JSON object on stdout if JSON was asked for anywhere."""
    hint = exc.console_hint()
    if json_asked(argv):
        print(render.as_json({"error": {"code": exc.code, "message": exc.message, "hint": hint}}))
    else:
        from .cli.colour import Paint, wanted

        error = Paint(wanted(sys.stderr)).error("Error")
        print(f"{error}: {exc.message}" + (f"\n{hint}" if hint else ""), file=sys.stderr)
    return exc.exit_code


def _named_system(g: GlobalOptions) -> None:
    """Point `g` at the inventory system named by --system or $CS_SYSTEM, if any (cli/target.py)."""
    from .cli.target import named_system, resolve

    name = named_system(g.system, g.connect, g.endpoint, g.server_key)
    g.system = None
    if name is not None:
        t = resolve(name)
        g.system, g.endpoint, g.server_key, g.connect = t.system, t.endpoint, t.server_key, t.connect
        g.system_key = t.key


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
        context = ActionContext(client, PlainConsole(interactive=stdin_is_tty), g.output_format, g.timeout, g.key,
                                g.system)
        try:
            return run_tokens(context, rest)
        except ExitShell:  # `cs exit`: there is no shell to leave, and nothing went wrong
            return errors.EXIT_OK
    if g.script is not None:
        return run_script(ActionContext(client, PlainConsole(interactive=False), g.output_format, g.timeout, g.key,
                                  g.system), g.script)
    if not stdin_is_tty:
        context = ActionContext(client, PlainConsole(interactive=False), g.output_format, g.timeout, g.key, g.system)
        return run_script(context, sys.stdin.read())
    from .shell.app import run_shell
    from .shell.ctrl_d import ctrl_d_as_a_key
    from .shell.foreground import own_foreground_group

    with own_foreground_group(), ctrl_d_as_a_key():
        return run_shell(client, g)
