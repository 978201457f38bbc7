"""Validation of request arguments against each command's declared schema (plain data)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Arg:
    """One argument: its JSON type, whether it must be given, and an optional `parse` that turns
    the raw value into what the command uses (raising ValueError with a readable reason)."""

    type: type
    required: bool = False
    parse: Callable[[Any], Any] | None = None
    help: str = ""


_TYPE_NAMES = {str: "a string", int: "an integer", bool: "true or false", dict: "an object", float: "a number"}


class ArgError(ValueError):
    pass


def _type_ok(value, expected: type) -> bool:
    if expected is int:  # JSON true/false are not integers here
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, expected)


def validate(schema: dict[str, Arg], args: dict) -> dict:
    """Return the parsed arguments or raise ArgError saying exactly what is wrong."""
    extra = sorted(set(args) - set(schema))
    if extra:
        known = ", ".join(sorted(schema)) or "none"
        raise ArgError(f"Unknown argument(s): {', '.join(extra)} (this operation takes: {known}).")
    parsed = {}
    for name, spec in schema.items():
        if name not in args:
            if spec.required:
                raise ArgError(f"Missing required argument '{name}' ({_TYPE_NAMES[spec.type]}).")
            continue
        value = args[name]
        if not _type_ok(value, spec.type):
            raise ArgError(f"Argument '{name}' must be {_TYPE_NAMES[spec.type]}, not {type(value).__name__} {value!r}.")
        if spec.parse is not None:
            try:
                value = spec.parse(value)
            except ValueError as exc:
                raise ArgError(f"Argument '{name}': {exc}.") from None
        parsed[name] = value
    return parsed


def non_negative(value: int) -> int:
    if value < 0:
        raise ValueError(f"must be 0 or more, not {value}")
    return value


def lease_seconds(value: float) -> float:
    if not 0 < value <= 3600:
        raise ValueError(f"must be more than 0 and at most 3600 seconds, not {value}")
    return float(value)


def label(value: str) -> str:
    """A short printable label (a run's owner, a reason)."""
    text = value.strip()
    if not text or len(text) > 200 or not text.isprintable():
        raise ValueError("must be 1 to 200 printable characters")
    return text
