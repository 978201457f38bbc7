"""Argument checks shared by the optimizers and schedulers: one clear InvalidArgument per bad value."""

from __future__ import annotations

import numbers

from csadmin.errors import InvalidArgument


def number(owner: str, name: str, value, low: float = 0.0, high: float | None = None, *,
           below_high: bool = False) -> float:
    """`value` as a float in [low, high] (or [low, high) with below_high), else InvalidArgument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidArgument(f"{owner}: {name} must be a number, not {value!r}.")
    value = float(value)
    top = "" if high is None else (f", below {high}" if below_high else f", at most {high}")
    if not (value >= low and (high is None or (value < high if below_high else value <= high))):
        raise InvalidArgument(f"{owner}: {name} must be at least {low}{top}; got {value}.")
    return value


def whole(owner: str, name: str, value, low: int = 0) -> int:
    """`value` as an int ≥ low, else InvalidArgument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InvalidArgument(f"{owner}: {name} must be a whole number ≥ {low}; got {value!r}.")
    return int(value)
