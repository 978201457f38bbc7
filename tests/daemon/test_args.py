"""Argument validation: every number is range-checked per argument, every string bounded, and a
bad value is quoted short; nothing a client sends reaches a command as an out-of-range value."""

import pytest

from csadmin.shared.opargs import ArgError, describe, validate
from csadmin.daemon.commands import COMMANDS

PROGRAM = {"fingerprint": "f", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
           "compile_time": 1.0, "est_samples_per_sec": 10.0, "size_bytes": 1}


def _refused(op: str, args: dict) -> str:
    with pytest.raises(ArgError) as info:
        validate(COMMANDS[op].SPEC.args, args)
    return str(info.value)


@pytest.mark.parametrize(
    "op, args",
    [
        ("audit.show", {"max_count": 2**63}),  # answered INTERNAL ("a bug in csd") before
        ("audit.show", {"max_count": 10**400}),
        ("events.show", {"max_count": 2**64}),
        ("events.show", {"from_time": -(2**63) - 1}),
        ("events.show", {"after_seq": 2**63}),
        ("runs.list", {"max_count": 2**63}),
        ("run.stream", {"run_id": "run-000001", "samples": 2**63}),
        ("run.stream", {"run_id": "run-000001", "samples": 10**13}),
        ("run.open", {"mode": "train", "lease_seconds": 10**400}),
        ("run.open", {"mode": "train", "lease_seconds": 2**63}),
    ],
)
def test_huge_numbers_are_invalid_arguments(op, args):
    message = _refused(op, args)
    assert len(message) < 300, "the value is not echoed whole"


@pytest.mark.parametrize(
    "field, value",
    [("compile_time", 10**400), ("size_bytes", 2**63), ("est_samples_per_sec", -(10**400)),
     ("compile_time", 2**51), ("fingerprint", "f" * 201)],
)
def test_program_descriptor_numbers_are_range_checked(field, value):
    """`compile_time: 10**400` crashed csd (OverflowError in math.isfinite)."""
    assert "program field" in _refused("run.program", {"run_id": "run-000001", "program": {**PROGRAM, field: value}})


@pytest.mark.parametrize(
    "op, args",
    [
        ("runs.show", {"run_id": "r" * 65}),
        ("events.show", {"event_type": "E" * 201}),
        ("run.open", {"mode": "x" * 5000}),
        ("config.execmode.setup", {"mode": "x" * 5000}),
        ("system.show", {"detailed": "x" * 5000}),
        ("system.show", {"x" * 5000: 1}),
        ("run.close", {"run_id": "run-000001", "reason": "x" * 5000}),
    ],
)
def test_long_strings_are_refused_and_quoted_short(op, args):
    assert len(_refused(op, args)) < 300


def test_values_at_the_limits_pass():
    assert validate(COMMANDS["audit.show"].SPEC.args, {"max_count": 2**63 - 1}) == {"max_count": 2**63 - 1}
    assert validate(COMMANDS["run.stream"].SPEC.args, {"run_id": "run-000001", "samples": 10**12})["samples"] == 10**12
    assert validate(COMMANDS["run.program"].SPEC.args, {"run_id": "run-000001", "program": PROGRAM})["program"] == PROGRAM


def test_describe_names_every_argument_for_a_runtime_developer():
    text = describe(COMMANDS["run.open"].SPEC.args)
    assert "mode (train or eval, required)" in text and "owner" in text and "lease_seconds" in text
    assert describe({}) == "no arguments"
