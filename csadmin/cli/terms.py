"""csd's refusals said in the console's own words: `system.standby` → `system standby`, the
argument 'mode' → `--mode`, and csd's list of an op's arguments → the command's help.

csd speaks its protocol (op and argument names, docs/protocol.md), which runtimes use; a person at
`cs` knows only commands and options. The command table knows both names of each (Command.op,
Argument.op_arg, Option.op_arg), so this module is the one place that translates, for every command.
"""

from __future__ import annotations

import re

from .. import errors
from ..shared import protocol
from .commands import COMMANDS, options_of
from .grammar import Command

# Every op the console asks for, and the first command that asks for it (`events show`, not
# `events follow`; the command being run is preferred to it, see _translate).
_COMMAND_OF_OP: dict[str, str] = {}
for _c in COMMANDS:
    if _c.op is not None:
        _COMMAND_OF_OP.setdefault(_c.op.name, _c.name)
# An op name as a whole word (not part of a longer dotted name or a path).
_OPS = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, sorted(_COMMAND_OF_OP, key=len, reverse=True)))
                  + r")(?![\w.]*\w)")


def _console_names(command: Command) -> dict[str, str]:
    """The op's argument names → the command's option (`--mode`) or argument (`ID`) names."""
    names = {option.op_arg: option.name for option in options_of(command)}
    names.update((a.op_arg, a.name) for a in command.arguments if a.op_arg)
    return names


def _translate(text: str, command: Command) -> str:
    names = {**_COMMAND_OF_OP, command.op.name: command.name}
    text = _OPS.sub(lambda m: names[m.group(1)], text)
    for arg, name in _console_names(command).items():
        # csadmin/shared/opargs.py quotes an argument's name: "Argument 'mode': …", "Missing required argument 'mode'".
        text = text.replace(f"Argument '{arg}'", name).replace(f"argument '{arg}'", name)
    return text


def in_console_terms(exc: errors.CsError, command: Command | None) -> errors.CsError:
    """`exc` as `command`'s user should read it (the same class, code and fault; a new message
    and hint). An error not from csd, or of a command that asks csd for nothing, is unchanged."""
    if command is None or command.op is None:
        return exc
    hint = exc.hint
    if isinstance(exc, errors.InvalidArgument) and hint.startswith(protocol.arguments_hint_prefix(command.op.name)):
        hint = f"See `{command.name} --help`."  # the console's options, not the op's arguments
    translated = type(exc)(_translate(exc.message, command), _translate(hint, command), exc.fault)
    return translated
