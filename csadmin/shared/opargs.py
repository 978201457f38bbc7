"""An op's arguments as plain data (`Arg`), and their validation against that schema.

Both ends import it (csadmin/shared/ops.py declares every op's arguments with it; csd validates each
request with `validate`), so it is a leaf: pure, stdlib only.

Every value is range-checked before a command sees it: integers fit in 64 bits (SQLite's range,
and what a JSON number from another language can hold), numbers are finite, strings are
bounded; each argument's `parse` narrows that further (a count, a label, a glob).
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .programs import quoted
from .protocol import REASON_MAX_CHARS
from .scenario_limits import MAX_SECONDS  # a year: what a scenario file may say too

INT_MIN, INT_MAX = -(2**63), 2**63 - 1
MAX_STRING_CHARS = 1000  # any string argument; `parse` functions bound most far lower
ECHO_CHARS = 60  # how much of a bad value an error message repeats


class Arg:
    """One argument: its JSON type, whether it must be given, an optional `parse` that turns the
    raw value into what the command uses (raising ValueError with a readable reason), a help
    text, a string's bound (a scenario's TOML text may be longer than MAX_STRING_CHARS), and the
    value a request that leaves it out gets (`default`: False for a flag, None unless declared).
    (A plain class with slots: neither `dataclasses`, which imports `inspect`, ~5 ms, nor
    NamedTuple, whose class costs ~0.15 ms, on every one-shot `cs`.)"""

    __slots__ = ("type", "required", "parse", "help", "max_chars", "default")

    def __init__(self, type: type, required: bool = False, parse: Callable[[Any], Any] | None = None,
                 help: str = "", max_chars: int = MAX_STRING_CHARS, default: Any = None):
        self.type, self.required, self.parse, self.help, self.max_chars = type, required, parse, help, max_chars
        self.default = False if type is bool and default is None else default

    def __repr__(self) -> str:
        return f"Arg({self.type.__name__}{', required' if self.required else ''})"


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "an object", float: "a number"}


class ArgError(ValueError):
    pass


def shorten(text: str, limit: int = ECHO_CHARS) -> str:
    """`text` cut to `limit` characters (with an ellipsis): a bad value is quoted, never echoed whole."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _type_ok(value, expected: type) -> bool:
    if expected is int:  # JSON true/false are not integers here
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, expected)


def _range_error(value, spec: Arg) -> str | None:
    """Why a value of the right JSON type is still out of any sane range, or None."""
    if isinstance(value, int) and not INT_MIN <= value <= INT_MAX:
        return "is out of range (it must fit in 64 bits)"
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if isinstance(value, str) and len(value) > spec.max_chars:
        return f"is longer than {spec.max_chars} characters"
    return None


def validate(schema: dict[str, Arg], args: dict) -> dict:
    """Return the parsed arguments or raise ArgError saying exactly what is wrong."""
    extra = sorted(set(args) - set(schema))
    if extra:
        known = ", ".join(sorted(schema)) or "none"
        names = shorten(", ".join(extra))
        raise ArgError(f"Unknown argument(s): {names} (this operation takes: {known}).")
    parsed = {}
    for name, spec in schema.items():
        if name not in args:
            if spec.required:
                raise ArgError(f"Missing required argument '{name}' ({_TYPE_NAMES[spec.type]}).")
            continue
        value = args[name]
        if not _type_ok(value, spec.type):
            raise ArgError(
                f"Argument '{name}' must be {_TYPE_NAMES[spec.type]}, not {type(value).__name__} {shorten(repr(value))}."
            )
        why = _range_error(value, spec)
        if why:
            raise ArgError(f"Argument '{name}' {why}.")
        if spec.parse is not None:
            try:
                value = spec.parse(value)
            except (ValueError, ArithmeticError) as exc:
                raise ArgError(f"Argument '{name}': {exc}.") from None
        parsed[name] = value
    return parsed


class Args:
    """One request's arguments, validated against its op's declaration: every argument the op
    declares is an attribute, the parsed value or, left out, its default (`Arg.default`). Built
    once — by csd's dispatcher for each request, by `Op.request` in a test — and handed down as
    it is: csd's command and the model read the arguments they use by the names the op declares,
    and none is relayed one by one on the way (a new argument is its declaration and the code
    that uses it). `given` is what the request said (a query's keywords, a cache's key).
    Read-only; `but(**values)` is a copy with some replaced (a default only csd knows, such as
    the caller's name)."""

    __slots__ = ("_schema", "given")

    def __init__(self, schema: dict[str, Arg], given: dict):
        object.__setattr__(self, "_schema", schema)
        object.__setattr__(self, "given", given)

    def __getattr__(self, name: str):
        spec = self._schema.get(name)
        if spec is None:
            raise AttributeError(f"the op takes no argument {name!r} (it takes: {', '.join(self._schema) or 'none'})")
        return self.given.get(name, spec.default)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError("a request's arguments are read-only: use but()")

    def but(self, **values) -> "Args":
        """A copy with `values` in place of what the request said (each an argument of the op)."""
        for name in values:
            getattr(self, name)  # AttributeError for an argument the op does not declare
        return Args(self._schema, {**self.given, **values})

    def __eq__(self, other) -> bool:
        return isinstance(other, Args) and self._schema is other._schema and self.given == other.given

    __hash__ = None

    def __repr__(self) -> str:
        return f"Args({self.given!r})"


def describe(schema: dict[str, Arg]) -> str:
    """The arguments an operation takes, for a hint a runtime developer can act on."""
    if not schema:
        return "no arguments"
    parts = []
    for name, spec in schema.items():
        what = spec.help or _TYPE_NAMES[spec.type]
        parts.append(f"{name} ({what}{', required' if spec.required else ''})")
    return "; ".join(parts)


# Taken by every op a console confirms: check the request against the rules (role, arguments,
# state) and say whether it would change anything, changing nothing (daemon/serve/dispatch.py).
DRY_RUN = Arg(bool, help="check only: the refusal, or whether it would change anything; changes nothing")


def non_negative(value: int) -> int:
    if value < 0:
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def at_most(limit: int) -> Callable[[int], int]:
    """A parse for a count between 0 and `limit`."""

    def count(value: int) -> int:
        if not 0 <= value <= limit:
            raise ValueError(f"must be between 0 and {limit:,}, not {shorten(str(value))}")
        return value

    return count


def lease_seconds(value: float) -> float:
    if not 0 < value <= 3600:
        raise ValueError(f"must be more than 0 and at most 3600 seconds, not {shorten(str(value))}")
    return float(value)


def label(value: str) -> str:
    """A short printable label (a run's owner, a reason)."""
    text = value.strip()
    if not text or len(text) > 200 or not text.isprintable():
        raise ValueError("must be 1 to 200 printable characters")
    return text


def path(value: str) -> str:
    """A file system path as a runtime reports it (kept and shown, never opened by csd)."""
    if not value or len(value) > 4096 or not value.isprintable() or value != value.strip():
        raise ValueError("must be a path of 1 to 4096 printable characters")
    return value


def reason(value: str) -> str:
    """Why a run ended (a runtime's exception message, say): printable text, whitespace runs
    folded to one space."""
    text = " ".join(value.split())
    if not text or len(text) > REASON_MAX_CHARS or not text.isprintable():
        raise ValueError(f"must be 1 to {REASON_MAX_CHARS} printable characters")
    return text


def run_id(value: str) -> str:
    """A run id as csd makes them (run-000042); anything longer cannot name a run."""
    if not value or len(value) > 64:
        raise ValueError("must be a run id of 1 to 64 characters, e.g. run-000042")
    return value


def seconds_after(value: float) -> float:
    """A delay in seconds: 0 or more, at most a year."""
    if not 0 <= value <= MAX_SECONDS:
        raise ValueError(f"must be between 0 and a year ({MAX_SECONDS} s), not {shorten(str(value))}")
    return float(value)


def seconds_for(value: float) -> float:
    """A duration in seconds: more than 0, at most a year."""
    if not 0 < value <= MAX_SECONDS:
        raise ValueError(f"must be more than 0 and at most a year ({MAX_SECONDS} s), not {shorten(str(value))}")
    return float(value)


def fault_name(value: str) -> str:
    """A fault's name (statemachine/faults/__init__.py checks it against the catalogue)."""
    if not value or len(value) > 100 or not value.isprintable():
        raise ValueError("must be a fault name of 1 to 100 printable characters, e.g. temperature-high-warn")
    return value


def join_token(value: str) -> str:
    """A run's join token (a secret): checked by the model, never repeated in a message."""
    if not value or len(value) > 200:
        raise ValueError("must be the run's join token (1 to 200 characters), as its opener got it from run.open")
    return value


MAX_SLOTS = 64  # a run's input worker slots: far beyond a CS-2's input nodes, small enough to list
_JOB_ID_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.+-")


def job_id(value: str) -> str:
    """A Slurm job id as its scripts see it: `42`, an array task `42_7`, a het component `42+1`."""
    text = value.strip()
    if not text or len(text) > 64 or not set(text) <= _JOB_ID_CHARS:
        raise ValueError(f"must be a Slurm job id such as 42 or 42_7 (1 to 64 letters, digits, _ . + -), not {quoted(value)}")
    return text


def glob(value: str) -> str:
    """A shell-style pattern on event types, e.g. EventActivate*."""
    if not value or len(value) > 200 or not value.isprintable():
        raise ValueError("must be a pattern of 1 to 200 printable characters, e.g. 'EventActivate*'")
    return value
