"""The faults present on one device, and the scenario it follows: state only, no rules.

An entry is one fault present: `scheduled` (injected with `--after`, or a scenario's step, not yet
due), `armed` (a transition fault waiting for its transition), `firing` (a transition fault whose
transition is under way and will fail) or `active` (affecting health and what is allowed). Entries
are immutable and the set is a tuple, so a change's savepoint (statemachine/change.py) is the
tuple itself: nothing is copied on the hot path. The rules that move entries are in
statemachine/faults/rules.py; statemachine/faults/injector.py applies them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import lru_cache

from . import scenario as fault_scenario
from . import BY_NAME, Fault

SCHEDULED, ARMED, FIRING, ACTIVE = "scheduled", "armed", "firing", "active"
# How `system show` orders them: what matters most last, so a reader keyed by name keeps it.
STATUS_ORDER = {SCHEDULED: 0, ARMED: 1, FIRING: 2, ACTIVE: 3}


@dataclass(frozen=True)
class Entry:
    """One fault present. Times are ms since the epoch. `due`: when a scheduled entry is
    injected; `for_ms`: how long it lasts once injected (None: until cleared); `until`: when an
    active (or armed) entry clears (or lapses); `by`: who injected it; `scenario`/`line`: the
    scenario step it came from."""

    fault: Fault
    status: str
    since: int
    until: int | None = None
    due: int | None = None
    for_ms: int | None = None
    by: dict | None = None
    scenario: str | None = None
    line: int | None = None

    @property
    def name(self) -> str:
        return self.fault.name

    @property
    def deadline(self) -> int | None:
        """When this entry next changes by itself (None: never)."""
        if self.status == SCHEDULED:
            return self.due
        if self.status == FIRING:
            return None  # its transition decides
        return self.until

    def moved(self, **changes) -> "Entry":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """The store form and, with the catalogue's words, the wire's (`Device.faults()`)."""
        d = {"name": self.name, "status": self.status, "since": self.since, "until": self.until,
             "due": self.due, "forMs": self.for_ms, "injected": True, "by": self.by}
        if self.scenario is not None:
            d.update(scenario=self.scenario, line=self.line)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Entry":
        return cls(BY_NAME[d["name"]], d["status"], int(d["since"]), d.get("until"), d.get("due"), d.get("forMs"),
                   d.get("by"), d.get("scenario"), d.get("line"))


@dataclass(frozen=True)
class LoadedScenario:
    """A scenario file loaded into the device: its text (kept, so a restart re-parses the same
    steps), when it was loaded, how many runs opened since, and which run-anchored steps (by
    index) still wait for their run."""

    source: str
    text: str
    loaded_at: int
    runs_opened: int
    waiting: tuple[int, ...]
    by: dict | None = None

    @property
    def digest(self) -> str:
        return text_digest(self.text)

    def moved(self, **changes) -> "LoadedScenario":
        return replace(self, **changes)

    def to_dict(self) -> dict:
        return {"source": self.source, "text": self.text, "loadedAt": self.loaded_at,
                "runsOpened": self.runs_opened, "waiting": list(self.waiting), "by": self.by}

    @classmethod
    def from_dict(cls, d: dict) -> "LoadedScenario":
        return cls(d["source"], d["text"], int(d["loadedAt"]), int(d["runsOpened"]), tuple(d["waiting"]), d.get("by"))


@lru_cache(maxsize=4)
def parsed_scenario(text: str, source: str) -> fault_scenario.Scenario:
    """The scenario in `text`, parsed once (a run opening consults it; parsing is pure)."""
    return fault_scenario.parse(text, source)


def text_digest(text: str) -> str:
    """What tells one scenario text from another (csd reloads a file only if it changed)."""
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class FaultState:
    """The entries present and the loaded scenario; a part of a change (statemachine/change.py)."""

    def __init__(self):
        self.entries: tuple[Entry, ...] = ()
        self.scenario: LoadedScenario | None = None
        self.revision = 0  # counts changes, for caches of what the device shows
    # -- reading ------------------------------------------------------------------------------

    def with_status(self, *statuses: str) -> list[Entry]:
        return [e for e in self.entries if e.status in statuses]

    def present(self, name: str) -> Entry | None:
        """The entry of `name` that is not merely scheduled (there is at most one)."""
        return next((e for e in self.entries if e.name == name and e.status != SCHEDULED), None)

    def next_deadline(self) -> int | None:
        deadlines = [e.deadline for e in self.entries if e.deadline is not None]
        return min(deadlines) if deadlines else None

    def ordered(self) -> list[Entry]:
        return sorted(self.entries, key=lambda e: (STATUS_ORDER[e.status], e.since, e.name))

    # -- changing -----------------------------------------------------------------------------

    def put(self, old: Entry | None, new: Entry | None) -> None:
        """Replace `old` by `new` (None: add / remove)."""
        entries = [e for e in self.entries if e is not old]
        if new is not None:
            entries.append(new)
        self.entries = tuple(entries)
        self.revision += 1

    def set_scenario(self, scenario: LoadedScenario | None) -> None:
        self.scenario = scenario
        self.revision += 1

    # -- persistence and changes --------------------------------------------------------------

    def snapshot(self) -> dict:
        return {"entries": [e.to_dict() for e in self.entries],
                "scenario": self.scenario.to_dict() if self.scenario else None}

    def restore(self, data: dict | None) -> None:
        data = data or {}
        self.entries = tuple(Entry.from_dict(e) for e in data.get("entries") or ())
        scenario = data.get("scenario")
        self.scenario = LoadedScenario.from_dict(scenario) if scenario else None

    def savepoint(self) -> tuple:
        return self.entries, self.scenario, self.revision

    def rollback(self, savepoint: tuple) -> None:
        self.entries, self.scenario, self.revision = savepoint

    def release(self, savepoint: tuple) -> None:
        pass
