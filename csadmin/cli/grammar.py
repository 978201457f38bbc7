"""What a `cs` command is, as plain data: its words and options (Command, Option), a command
line parsed against it (Parsed), and its action (Action), which gets an ActionContext and returns the
exit code. The table of commands is commands.py.

(NamedTuples rather than dataclasses: `dataclasses` imports `inspect`, ~5 ms on every one-shot.)
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

from ..shared.ops import Op
from .action_context import ActionContext


class Source:
    """A live source of completions the shell asks csd (or the inventory) for: `fetch(context)`.
    `kept`: what it returns holds for the system in use (csd's catalogues), so the shell asks
    once per system; otherwise (the runs) it asks at each TAB. The sources are sources.py's.
    (This and Argument are plain slotted classes: a NamedTuple class costs ~0.15 ms to define,
    on every one-shot `cs`.)"""

    __slots__ = ("fetch", "kept")

    def __init__(self, fetch: Callable[[ActionContext], Iterable[str]], kept: bool = False):
        self.fetch, self.kept = fetch, kept


class Option(NamedTuple):
    name: str  # "--mode"
    help: str
    takes_value: bool = False
    metavar: str = "VALUE"
    values: tuple[str, ...] = ()  # completion candidates (and, if `choices`, the only ones allowed)
    choices: bool = False
    integer: bool = False
    complete_from: Source | None = None  # a live source of its values (sources.EVENT_TYPES)
    number: bool = False  # a number of seconds (float)
    arg: str = ""  # the csd op's argument it sets, when not its `dest` (--for: for_seconds)
    parse: Callable[[str], object] | None = None  # raises ValueError for a value csd would refuse

    @property
    def dest(self) -> str:
        return self.name.lstrip("-").replace("-", "_")

    @property
    def op_arg(self) -> str:
        return self.arg or self.dest


class Argument:
    """A positional argument: its name in the usage ("ID"; "[NAME]" when it may be left out),
    the csd op's argument it fills (so csd's refusals name it: terms.py), and a live source of
    its values for the shell's completion."""

    __slots__ = ("metavar", "op_arg", "complete_from")

    def __init__(self, metavar: str, op_arg: str = "", complete_from: Source | None = None):
        self.metavar, self.op_arg, self.complete_from = metavar, op_arg, complete_from

    @property
    def optional(self) -> bool:
        return self.metavar.startswith("[")

    @property
    def name(self) -> str:
        return self.metavar.strip("[]")


class Command(NamedTuple):
    words: tuple[str, ...]
    help: str
    action: Action  # the function that carries the command out (actions.py, commands.py)
    options: tuple[Option, ...] = ()
    aliases: tuple[tuple[str, ...], ...] = ()
    changes_state: bool = False  # asks for confirmation unless --no-confirm; refused in scripts without it
    reads: bool = False  # reads state only (no confirmation, safe to retry)
    output: bool = True  # prints a result, so takes --output-format
    details: str = ""
    arguments: tuple[Argument, ...] = ()  # positional arguments, in order
    takes_command: bool = False  # its arguments name a command (help)
    shell_only: bool = False  # offered only in the interactive shell (exit)
    # The csd op it asks for (csadmin/shared/ops.py), so csd's refusals can be said in the console's own
    # names (terms.py): system.standby → `system standby`.
    op: Op | None = None
    # Checks of the parsed line beyond its grammar (actions.py), run before anything is sent and
    # over a whole script before its first line runs; `interactive`: whether someone can answer.
    check: Callable[[Parsed, bool], None] | None = None

    @property
    def name(self) -> str:
        return " ".join(self.words)

    @property
    def usage(self) -> str:
        return " ".join((self.name, *(a.metavar for a in self.arguments)))


class Parsed(NamedTuple):
    command: Command
    options: dict
    args: list[str]


Action = Callable[[ActionContext, Parsed], int]  # returns the exit code
