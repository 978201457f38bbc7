"""`help` and `cs --help`: the list of commands, or the usage, options and aliases of those a
line names, as text or as JSON, from the command table it is given (commands.py's COMMANDS and
options_of). Loaded only when help is asked for, never on a one-shot's path.
"""

from __future__ import annotations

from typing import Callable, Sequence

from .. import errors
from .grammar import Command, Option
from .render import shown

OptionsOf = Callable[[Command], tuple[Option, ...]]  # a command's options, the console's own included


def _helped(table: Sequence[Command], words: list[str], in_shell: bool) -> list[Command]:
    """The commands `words` name (a command, a group such as `system fault`, or all of them).
    Outside the shell, the shell's own commands (exit) are left out."""
    offered = [c for c in table if in_shell or not c.shell_only]
    wanted = " ".join(words)
    matches = [c for c in offered if not words or c.name == wanted or c.name.startswith(wanted + " ")]
    if not matches:
        raise errors.UsageError(f"No command `{shown(wanted)}`.", "Type `help` for the list of commands.")
    return matches


def help_data(table: Sequence[Command], options_of: OptionsOf, words: list[str], in_shell: bool = False) -> list[dict]:
    """`help` as JSON: each command's name, usage, summary, details, options and aliases."""
    return [{"command": c.name, "usage": c.usage, "help": c.help, "details": c.details,
             "options": [{"name": o.name, "value": o.metavar if o.takes_value else None, "help": o.help}
                         for o in options_of(c)],
             "aliases": [" ".join(a) for a in c.aliases]}
            for c in _helped(table, words, in_shell)]


def help_text(table: Sequence[Command], options_of: OptionsOf, words: list[str], in_shell: bool = False) -> str:
    """The list of commands, or the usage, options and aliases of those `words` name (a command
    or a group: `system fault`)."""
    offered = _helped(table, words, in_shell)
    if words:
        blocks = []
        for c in offered:
            lines = [f"{c.usage} — {c.help}"]
            if c.details:
                lines.append(f"  {c.details}")
            lines += [f"  {o.name}{' ' + o.metavar if o.takes_value else ''}: {o.help}" for o in options_of(c)]
            lines += [f"  alias: {' '.join(a)}" for a in c.aliases]
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)
    width = max(len(c.usage) for c in offered)
    return ("\n".join(f"  {c.usage.ljust(width)}  {c.help}" for c in offered)
            + "\n\nhelp COMMAND (or COMMAND --help) shows a command's options.")
