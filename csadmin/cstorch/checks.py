"""The argument checks the package's constructors share (the optimizers and schedulers, the
GradScaler and amp.optimizer_step, the DataLoader): one clear InvalidArgument per bad value, and
`plain_value`, a setting as the run's yaml can hold it. Internal: cstorch's __init__ does not
export it (the real package's own checks.py holds its tensor-call checks, which this runtime
has no use for)."""

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


def pair(owner: str, name: str, value, low: float = 0.0, high: float | None = None, *,
         below_high: bool = False, parts: str = "two numbers") -> tuple[float, float]:
    """`value` (a tuple or list of two) as two floats, each checked as `number` checks one
    (`name[0]`, `name[1]` in the message); `parts` says in the refusal what the pair holds."""
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise InvalidArgument(f"{owner}: {name} must be a pair ({parts}); got {value!r}.")
    first, second = (number(owner, f"{name}[{i}]", v, low, high, below_high=below_high) for i, v in enumerate(value))
    return first, second


def betas_pair(owner: str, betas) -> tuple[float, float]:
    """(beta1, beta2), each in [0, 1): what every real class taking `betas` checks."""
    return pair(owner, "betas", betas, 0.0, 1.0, below_high=True, parts="beta1, beta2")


def real(owner: str, name: str, value) -> float:
    """`value` as a float, any sign: for a setting the real class takes unchecked (a negative one
    is the user's choice), refusing only what is not a number at all."""
    return number(owner, name, value, float("-inf"))


def whole(owner: str, name: str, value, low: int = 0) -> int:
    """`value` as an int ≥ low, else InvalidArgument."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise InvalidArgument(f"{owner}: {name} must be a whole number ≥ {low}; got {value!r}.")
    return int(value)


def plain_value(value):
    """`value` as YAML can hold it (numbers, strings, booleans, lists of them; a one-element
    tensor as its number), or None when it is something else."""
    if hasattr(value, "numel") and hasattr(value, "item"):  # a tensor (this module needs no torch)
        return value.item() if value.numel() == 1 else None
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        items = [plain_value(v) for v in value]
        return None if any(v is None for v in items) else items
    return None
