"""Fault scenarios: a declarative TOML file of faults to inject on a schedule, for the test
suites of training runtimes ("after 30 s of the first run, a temperature warning for 10 s; at
60 s a PSU error"). This module parses the file's text (pure: the caller reads the file) into
`Step`s the daemon schedules; every mistake is reported with the line it is on.

    description = "a warm spell in the first run, then a power supply failure"

    [[fault]]
    name = "temperature-high-warn"
    after_run = 30      # seconds after run 1 opens (`run = 2` for the second run, and so on)
    for = 10            # then it clears; without `for` it stays until cleared

    [[fault]]
    name = "psu-hardware-error"
    at = 60             # seconds after the scenario is loaded

Each `[[fault]]` has a `name` (a catalogued fault: statemachine/faults/__init__.py; any case, or the
event it raises) and exactly one of `at` (seconds after the scenario is loaded) and `after_run`
(seconds after the run numbered `run`, counted from 1 among the runs opened since the scenario
was loaded, opens); `for` (seconds) clears it that long after it was injected; for a transition
fault it is how long it stays armed.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass

from csadmin.shared import scenario_limits

from . import Fault, parse_fault

MAX_STEPS = 1_000

LOAD = "load"  # anchored at the moment the scenario is loaded
RUN = "run"  # anchored at a run's opening (its EventTrainingStarted)

_STEP_KEYS = ("name", "at", "after_run", "run", "for")
_TOP_KEYS = ("description", "fault")
_HEADER = re.compile(r"^\s*\[\[\s*fault\s*\]\]\s*(#.*)?$")
_ANY_TABLE = re.compile(r"^\s*\[")


@dataclass(frozen=True)
class Step:
    """Inject `fault` `offset_ms` after its anchor (LOAD, or RUN: the opening of run number
    `run`); clear it `duration_ms` after that (None: it stays until cleared). `line` is where
    the step starts in the file, for messages."""

    fault: Fault
    anchor: str
    offset_ms: int
    duration_ms: int | None
    run: int | None
    line: int

    def describe(self) -> str:
        """The step in words: `temperature-high-warn 30 s after run 1 opens, for 10 s`."""
        when = f"{_s(self.offset_ms)} after the scenario is loaded" if self.anchor == LOAD else \
            f"{_s(self.offset_ms)} after run {self.run} opens"
        until = f", for {_s(self.duration_ms)}" if self.duration_ms is not None else ", until cleared"
        return f"{self.fault.name} {when}{until}"


@dataclass(frozen=True)
class Scenario:
    description: str
    steps: tuple[Step, ...]


class ScenarioError(ValueError):
    """The scenario cannot be used. `problems` are (line or None, message), in file order; the
    message lists them all, one per line, each naming the file and line."""

    def __init__(self, source: str, problems: list[tuple[int | None, str]]):
        self.source = source
        self.problems = problems
        lines = [f"{source}, line {line}: {text}" if line else f"{source}: {text}" for line, text in problems]
        super().__init__("\n".join(lines))


def parse(text: str, source: str = "scenario") -> Scenario:
    """The scenario in `text` (a TOML document; `source` names it in errors). Raises
    ScenarioError listing every problem found. Its size and nesting are checked before it is
    parsed (csadmin/shared/scenario_limits.py), so no text makes the parser recurse or grow without bound."""
    over = scenario_limits.problem(text, source)
    if over is not None:
        raise ScenarioError(source, [over])
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "… (at line 4, column 9)"; lift the line to the front like the others.
        found = re.search(r"\(at line (\d+), column \d+\)$", str(exc))
        message = str(exc)[: found.start()].strip() if found else str(exc)
        raise ScenarioError(source, [(int(found.group(1)) if found else None, f"not valid TOML: {message}")]) from None
    except ValueError as exc:  # not tomllib's own: int() refusing a number of over 4,300 digits
        raise ScenarioError(source, [(None, f"not valid TOML: {str(exc).split(':')[0]}")]) from None
    lines = _Lines(text)
    problems: list[tuple[int | None, str]] = []
    for key in data:
        if key not in _TOP_KEYS:
            problems.append((lines.top_key(key), f"unknown key `{key}` (a scenario has `description` and "
                                                 f"[[fault]] tables)"))
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append((lines.top_key("description"), "`description` must be a string"))
        description = ""
    entries = data.get("fault", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        problems.append((lines.top_key("fault"), "`fault` must be a list of tables: write each as [[fault]]"))
        entries = []
    if not entries and not problems:
        problems.append((None, "no faults: add a [[fault]] table for each fault to inject"))
    if len(entries) > MAX_STEPS:
        problems.append((lines.entry(MAX_STEPS), f"too many faults ({len(entries)}); at most {MAX_STEPS}"))
        entries = entries[:MAX_STEPS]
    steps = []
    for index, entry in enumerate(entries):
        step = _step(entry, index, lines, problems)
        if step is not None:
            steps.append(step)
    if problems:
        raise ScenarioError(source, sorted(problems, key=lambda p: p[0] or 0))  # stable: file order
    return Scenario(description, tuple(steps))


def _step(entry: dict, index: int, lines: "_Lines", problems: list) -> Step | None:
    start = lines.entry(index)
    before = len(problems)

    def problem(key: str | None, message: str) -> None:
        problems.append((lines.key_in_entry(index, key) if key else start, message))

    for key in entry:
        if key not in _STEP_KEYS:
            problem(key, f"unknown key `{key}` in [[fault]] (its keys: {', '.join(_STEP_KEYS)})")
    fault = None
    name = entry.get("name")
    if name is None:
        problem(None, "[[fault]] has no `name`: say which fault to inject")
    elif not isinstance(name, str):
        problem("name", "`name` must be a string, such as \"temperature-high-warn\"")
    else:
        try:
            fault = parse_fault(name)
        except ValueError as exc:
            problem("name", str(exc))
    anchors = [key for key in ("at", "after_run") if key in entry]
    if len(anchors) != 1:
        which = "both `at` and `after_run`" if anchors else "neither `at` nor `after_run`"
        problem(anchors[-1] if anchors else None,
                f"[[fault]] has {which}: give exactly one (`at`: seconds after the scenario is loaded; "
                "`after_run`: seconds after a run opens)")
    offset = {key: _seconds(entry[key], key, problem, allow_zero=True) for key in anchors}
    duration = _seconds(entry["for"], "for", problem, allow_zero=False) if "for" in entry else None
    run = entry.get("run")
    if run is not None:
        if "after_run" not in entry:
            problem("run", "`run` goes with `after_run` (which run's opening to count from)")
        elif not isinstance(run, int) or isinstance(run, bool) or not 1 <= run <= MAX_STEPS:
            problem("run", f"`run` must be a whole number from 1 (the first run) to {MAX_STEPS}, not {run!r}")
    if len(problems) > before or fault is None:
        return None
    anchor = RUN if "after_run" in entry else LOAD
    return Step(fault, anchor, offset["after_run" if anchor == RUN else "at"], duration,
                (run or 1) if anchor == RUN else None, start)


def _seconds(value, key: str, problem, allow_zero: bool) -> int | None:
    """`value` seconds as milliseconds, or None after reporting why it cannot be."""
    least = "0 or more" if allow_zero else "more than 0"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        problem(key, f"`{key}` must be a number of seconds ({least}), not {value!r}")
        return None
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero) or value > scenario_limits.MAX_SECONDS:
        problem(key, f"`{key}` must be {least} seconds and at most {scenario_limits.MAX_SECONDS} (a year), not {value!r}")
        return None
    ms = round(value * 1000)
    if ms == 0 and not allow_zero:
        problem(key, f"`{key}` must be at least 0.001 seconds, not {value!r}")
        return None
    return ms


class _Lines:
    """Where things are in the file, for messages: tomllib does not say, so the text is scanned
    for the `[[fault]]` headers (entry i is the i-th header) and for `key =` lines within them."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.headers = [i for i, line in enumerate(self.lines) if _HEADER.match(line)]

    def _find(self, key: str, start: int, end: int) -> int | None:
        pattern = re.compile(rf"^\s*(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')\s*=")
        for i in range(start, end):
            if pattern.match(self.lines[i]):
                return i + 1
        return None

    def top_key(self, key: str) -> int | None:
        end = next((i for i, line in enumerate(self.lines) if _ANY_TABLE.match(line)), len(self.lines))
        found = self._find(key, 0, end)
        if found is None:  # a table of that name: `[fault]` or `[[fault]]`
            header = re.compile(rf"^\s*\[\[?\s*{re.escape(key)}\s*\]")
            found = next((i + 1 for i, line in enumerate(self.lines) if header.match(line)), None)
        return found

    def entry(self, index: int) -> int | None:
        if index < len(self.headers):
            return self.headers[index] + 1
        return self.top_key("fault")  # written inline (`fault = [{…}]`): the line it starts on

    def key_in_entry(self, index: int, key: str) -> int | None:
        if index >= len(self.headers):
            return self.entry(index)
        start = self.headers[index] + 1
        end = next((i for i in range(start, len(self.lines)) if _ANY_TABLE.match(self.lines[i])), len(self.lines))
        return self._find(key, start, end) or start


def _s(ms: int) -> str:
    return f"{ms / 1000:g} s"
