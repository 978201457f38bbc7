"""What a runtime brings to a run: its mode and the descriptor of its compiled program.

Checking is pure: functions here raise ValueError with a readable reason, which the daemon's
argument validation turns into INVALID_ARGUMENT. Compatibility with *this* system (serial,
execution mode, the run's mode) is a rule of the run (PROGRAM_RULES in statemachine/run_rules.py),
not of the input.
"""

from __future__ import annotations

import math
from enum import Enum

from csadmin.shared.states import ExecMode


class RunMode(str, Enum):
    TRAIN = "train"
    EVAL = "eval"


# A program compiled for train_and_eval cannot run: the fabric cannot be reprogrammed for eval
# after train within one run.
TRAIN_AND_EVAL = "train_and_eval"
TRAIN_AND_EVAL_WHY = "the fabric cannot be reprogrammed for eval after train in one run"
TRAIN_AND_EVAL_NEXT = "Open a train run, close it, then open an eval run."

PROGRAM_FIELDS = {
    "fingerprint": str,
    "target_system": str,
    "execmode": str,
    "mode": str,
    "compile_time": float,
    "est_samples_per_sec": float,
    "size_bytes": int,
}
_FIELD_TYPES = {str: "a string", float: "a number", int: "an integer"}
# The largest number a descriptor field may hold: far beyond any real program (a petabyte, ~30
# years of compiling), far below what would overflow the arithmetic of programming times.
PROGRAM_NUMBER_MAX = 2**50


def quoted(value, limit: int = 40) -> str:
    """repr(value), cut short: refusals quote what they got, never echo it whole."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_program(raw: dict) -> dict:
    """Check a compiled program's descriptor; return it normalised. Raises ValueError saying
    which field is missing, unknown or wrong."""
    if not isinstance(raw, dict):
        raise ValueError("the program descriptor must be an object")
    missing = [k for k in PROGRAM_FIELDS if k not in raw]
    if missing:
        raise ValueError(f"the program descriptor lacks {', '.join(missing)} (it needs {', '.join(PROGRAM_FIELDS)})")
    extra = sorted(set(raw) - set(PROGRAM_FIELDS))
    if extra:
        raise ValueError(f"the program descriptor has unknown field(s) {quoted(', '.join(extra))[1:-1]}")
    program = {}
    for key, kind in PROGRAM_FIELDS.items():
        value = raw[key]
        ok = not isinstance(value, bool) and (
            isinstance(value, (int, float)) if kind is float else isinstance(value, kind)
        )
        if not ok:
            raise ValueError(f"program field {key!r} must be {_FIELD_TYPES[kind]}, not {quoted(value)}")
        if kind is not str and not (isinstance(value, int) or math.isfinite(value)):
            raise ValueError(f"program field {key!r} must be a finite number, not {quoted(value)}")
        if kind is not str and abs(value) > PROGRAM_NUMBER_MAX:
            raise ValueError(f"program field {key!r} is out of range (at most {PROGRAM_NUMBER_MAX:,})")
        if kind is str and not value.strip():
            raise ValueError(f"program field {key!r} must not be empty")
        if kind is str and len(value) > 200:
            raise ValueError(f"program field {key!r} is longer than 200 characters")
        program[key] = value
    if program["compile_time"] < 0 or program["size_bytes"] < 0:
        raise ValueError("program fields compile_time and size_bytes must be 0 or more")
    if program["est_samples_per_sec"] <= 0:
        raise ValueError("program field est_samples_per_sec must be more than 0")
    try:
        program["execmode"] = ExecMode.parse(program["execmode"]).value
    except ValueError as exc:
        raise ValueError(f"program field 'execmode': {exc}") from None
    program["mode"] = program["mode"].strip().lower()
    if program["mode"] not in (RunMode.TRAIN.value, RunMode.EVAL.value, TRAIN_AND_EVAL):
        raise ValueError(f"program field 'mode' must be train or eval, not {quoted(raw['mode'])}")
    return program


def parse_mode(text: str) -> RunMode:
    """A run's mode: `train` or `eval`. Raises ValueError (train_and_eval says why not)."""
    key = text.strip().lower()
    if key == TRAIN_AND_EVAL:
        raise ValueError(f"{TRAIN_AND_EVAL} is not supported: {TRAIN_AND_EVAL_WHY}; "
                         f"{TRAIN_AND_EVAL_NEXT[0].lower()}{TRAIN_AND_EVAL_NEXT[1:-1]}")
    try:
        return RunMode(key)
    except ValueError:
        raise ValueError(f"mode must be train or eval, not {quoted(text)}") from None
