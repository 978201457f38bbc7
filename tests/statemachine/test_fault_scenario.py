"""Fault scenario files (statemachine/faults/scenario.py): what a runtime's test suite writes, what
csd will schedule from it, and the line-naming errors a mistake gets."""

from __future__ import annotations

import pytest

from csadmin.statemachine.faults.scenario import LOAD, MAX_STEPS, RUN, ScenarioError, Step, parse
from csadmin.statemachine.faults import BY_NAME

# The issue's own example: "after 30 s of run, temperature warning for 10 s; at 60 s PSU error".
ISSUE_EXAMPLE = """\
description = "a warm spell in the first run, then a power supply failure"

[[fault]]
name = "temperature-high-warn"
after_run = 30
for = 10

[[fault]]
name = "psu-hardware-error"
at = 60
"""


def test_the_issues_example():
    scenario = parse(ISSUE_EXAMPLE, "warm.toml")
    assert scenario.description == "a warm spell in the first run, then a power supply failure"
    assert scenario.steps == (
        Step(BY_NAME["temperature-high-warn"], RUN, 30_000, 10_000, 1, 3),
        Step(BY_NAME["psu-hardware-error"], LOAD, 60_000, None, None, 8),
    )
    assert [s.describe() for s in scenario.steps] == [
        "temperature-high-warn 30 s after run 1 opens, for 10 s",
        "psu-hardware-error 60 s after the scenario is loaded, until cleared",
    ]


def test_steps_keep_file_order_and_names_are_forgiving():
    scenario = parse("""
[[fault]]
name = "EventPumpMissing"   # the event's name works too
at = 0.25
[[fault]]
name = "ACTIVATE_FAILS"
after_run = 0
run = 3
for = 1.5
""")
    assert [(s.fault.name, s.anchor, s.offset_ms, s.duration_ms, s.run, s.line) for s in scenario.steps] == [
        ("pump-missing", LOAD, 250, None, None, 2),
        ("activate-fails", RUN, 0, 1500, 3, 5),
    ]
    assert scenario.description == ""


def test_inline_tables_parse_too():
    scenario = parse('fault = [{name = "health-degraded", at = 1}, {name = "health-critical", at = 2, for = 3}]')
    assert [(s.fault.name, s.offset_ms, s.duration_ms, s.line) for s in scenario.steps] == [
        ("health-degraded", 1000, None, 1), ("health-critical", 2000, 3000, 1)]


def problems(text: str) -> list[tuple[int | None, str]]:
    with pytest.raises(ScenarioError) as info:
        parse(text, "s.toml")
    return info.value.problems


@pytest.mark.parametrize("text, line, says", [
    ("[[fault]]\nname = \"pump-missing\"\nat = 1\nat = 2\n", 4, "not valid TOML: Cannot overwrite a value"),
    ("[[fault]\n", 1, "not valid TOML"),
    ("", None, "no faults: add a [[fault]] table"),
    ("description = \"nothing\"\n", None, "no faults"),
    ("descripton = \"x\"\n[[fault]]\nname = \"pump-missing\"\nat = 1\n", 1, "unknown key `descripton`"),
    ("description = 3\n[[fault]]\nname = \"pump-missing\"\nat = 1\n", 1, "`description` must be a string"),
    ("fault = \"pump-missing\"\n", 1, "`fault` must be a list of tables"),
    ("fault = [1, 2]\n", 1, "`fault` must be a list of tables"),
    ("[fault]\nname = \"pump-missing\"\nat = 1\n", 1, "`fault` must be a list of tables: write each as [[fault]]"),
    ("[[fault]]\nat = 1\n", 1, "[[fault]] has no `name`"),
    ("[[fault]]\nat = 1\nname = 3\n", 3, "`name` must be a string"),
    ("\n[[fault]]\nname = \"temprature-high-warn\"\nat = 1\n", 3,
     "unknown fault 'temprature-high-warn' (did you mean temperature-high-warn?)"),
    ("[[fault]]\nname = \"pump-missing\"\n", 1, "has neither `at` nor `after_run`"),
    ("[[fault]]\nname = \"pump-missing\"\nat = 1\nafter_run = 2\n", 4, "has both `at` and `after_run`"),
    ("[[fault]]\nname = \"pump-missing\"\nat = -1\n", 3, "`at` must be 0 or more seconds"),
    ("[[fault]]\nname = \"pump-missing\"\nat = nan\n", 3, "`at` must be 0 or more seconds"),
    ("[[fault]]\nname = \"pump-missing\"\nat = inf\n", 3, "`at` must be 0 or more seconds"),
    ("[[fault]]\nname = \"pump-missing\"\nat = 1e12\n", 3, "at most 31622400 (a year)"),
    ("[[fault]]\nname = \"pump-missing\"\nat = true\n", 3, "`at` must be a number of seconds"),
    ("[[fault]]\nname = \"pump-missing\"\nat = \"30s\"\n", 3, "`at` must be a number of seconds (0 or more), not '30s'"),
    ("[[fault]]\nname = \"pump-missing\"\nat = 1\nfor = 0\n", 4, "`for` must be more than 0 seconds"),
    ("[[fault]]\nname = \"pump-missing\"\nat = 1\nfor = 0.0001\n", 4, "`for` must be at least 0.001 seconds"),
    ("[[fault]]\nname = \"pump-missing\"\nat = 1\nrun = 2\n", 4, "`run` goes with `after_run`"),
    ("[[fault]]\nname = \"pump-missing\"\nafter_run = 1\nrun = 0\n", 4, "`run` must be a whole number from 1"),
    ("[[fault]]\nname = \"pump-missing\"\nafter_run = 1\nrun = 1.5\n", 4, "`run` must be a whole number"),
    ("[[fault]]\nname = \"pump-missing\"\nafter_run = 1\n\"colour\" = \"red\"\n", 4, "unknown key `colour` in [[fault]]"),
])
def test_a_mistake_is_named_with_its_line(text, line, says):
    found = problems(text)
    assert len(found) == 1, found
    assert found[0][0] == line and says in found[0][1], found


def test_every_mistake_is_reported_at_once_in_file_order():
    text = """\
[[fault]]
name = "pump-missing"
at = -5

[[fault]]     # this one is fine
name = "health-degraded"
at = 1

[[fault]]
colour = "red"
name = "fire"
after_run = 2
"""
    with pytest.raises(ScenarioError) as info:
        parse(text, "suite/faults.toml")
    assert [line for line, _ in info.value.problems] == [3, 10, 11]
    lines = str(info.value).splitlines()
    assert lines[0].startswith("suite/faults.toml, line 3: `at` must be 0 or more seconds")
    assert lines[1].startswith("suite/faults.toml, line 10: unknown key `colour`")
    assert lines[2].startswith("suite/faults.toml, line 11: unknown fault 'fire'")


def test_a_file_without_faults_names_no_line():
    with pytest.raises(ScenarioError) as info:
        parse("# nothing yet\n", "empty.toml")
    assert str(info.value) == "empty.toml: no faults: add a [[fault]] table for each fault to inject"


def test_too_many_steps_are_refused():
    text = "".join(f"[[fault]]\nname = \"health-degraded\"\nat = {i}\n" for i in range(MAX_STEPS + 1))
    found = problems(text)
    assert found == [(MAX_STEPS * 3 + 1, f"too many faults ({MAX_STEPS + 1}); at most {MAX_STEPS}")]


def test_times_are_kept_to_the_millisecond():
    (step,) = parse("[[fault]]\nname = \"health-degraded\"\nat = 0.0004\nfor = 0.0015\n").steps
    assert (step.offset_ms, step.duration_ms) == (0, 2)
