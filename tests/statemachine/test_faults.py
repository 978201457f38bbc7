"""The fault catalogue (statemachine/faults/__init__.py), pinned down by tables and checked against the real
system's reference files (tests/reference/: the event catalogue and the systemHealth values with
their rank)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from csadmin.statemachine import faults
from csadmin.statemachine.faults import BY_NAME, FAULTS, Effect, Outcome, Transition
from csadmin.statemachine.faults.rules import EFFECTS
from csadmin.statemachine.lifecycle_rules import HEALTH
from csadmin.shared.states import ACTIVATED_HEALTH, Health, Lifecycle, Severity

REFERENCE = Path(__file__).resolve().parents[1] / "reference"


def reference_events() -> dict[str, tuple[str, str]]:
    """type → (severity, systemHealth it implies, "" for none), from cs2-events.tsv."""
    table = {}
    for line in (REFERENCE / "cs2-events.tsv").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            type_, severity, *mapping = line.split("\t")
            table[type_] = (severity, mapping[0] if mapping else "")
    return table


def reference_health() -> tuple[dict[str, int], list[str]]:
    """The systemHealth values with their codes, and the rank (least to most severe) from the
    comment under them, from cs2-system-health.tsv."""
    text = (REFERENCE / "cs2-system-health.tsv").read_text()
    codes = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            value, code = line.split("\t")
            codes[value] = int(code)
    comment = " ".join(line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
    rank = re.search(r"severity rank, low to high: (.*?)(?: #|\"|$)", comment).group(1)
    rank = re.sub(r"\s*\"activated\".*", "", rank)
    return codes, [v.strip() for v in rank.split("<")]


# -- what each fault is and does: the table ----------------------------------------------------------

EXPECTED = {
    # name: (event, severity, health, effect)
    "health-degraded": ("EventHealthDegraded", "WARN", "DEGRADED", Effect.WARNING),
    "temperature-high-warn": ("EventSensorTemperatureHighWarn", "WARN", "DEGRADED", Effect.WARNING),
    "flow-rate-low-warn": ("EventSensorFlowRateLowWarn", "WARN", "DEGRADED", Effect.WARNING),
    "health-critical": ("EventHealthCritical", "CRITICAL", "CRITICAL", Effect.CRITICAL),
    "temperature-high-critical": ("EventSensorTemperatureHighCritical", "CRITICAL", "CRITICAL", Effect.CRITICAL),
    "flow-rate-low-critical": ("EventSensorFlowRateLowCritical", "CRITICAL", "CRITICAL", Effect.CRITICAL),
    "psu-hardware-error": ("EventPsuHardwareError", "CRITICAL", "HARDWARE_ERROR", Effect.CRITICAL),
    "pump-missing": ("EventPumpMissing", "CRITICAL", "MISSING", Effect.CRITICAL),
    "emergency-shutdown": ("EventEmergencyShutdownSensorCritical", "CRITICAL", "CRITICAL_EMERGENCY_SHUTDOWN",
                           Effect.SHUTDOWN),
    "activate-fails": ("EventActivateFailed", "ERROR", "CRITICAL", Effect.TRANSITION),
    "activate-times-out": ("EventActivateTimedout", "ERROR", "CRITICAL", Effect.TRANSITION),
    "standby-fails": ("EventStandbyFailed", "ERROR", "CRITICAL", Effect.TRANSITION),
    "standby-times-out": ("EventStandbyTimedout", "ERROR", "CRITICAL", Effect.TRANSITION),
    "execmode-fails": ("EventSetExecModeFailed", "ERROR", "CRITICAL", Effect.TRANSITION),
}


def test_the_catalogue_is_the_table():
    actual = {f.name: (f.event, f.severity.value, f.health, f.effect) for f in FAULTS}
    assert actual == EXPECTED


@pytest.mark.parametrize("fault", FAULTS, ids=lambda f: f.name)
def test_each_fault_raises_a_real_event_with_its_reference_severity_and_health(fault):
    ref = reference_events()
    assert fault.event in ref, f"{fault.event} is not in the real event catalogue"
    assert (fault.severity.value, fault.health) == ref[fault.event]
    for event in fault.also:
        assert event in ref and ref[event][0] == faults.EVENT_SEVERITIES[event].value


def test_the_issue_names_every_event_it_asks_for():
    named = {"EventHealthDegraded", "EventSensorTemperatureHighWarn", "EventSensorTemperatureHighCritical",
             "EventSensorFlowRateLowWarn", "EventSensorFlowRateLowCritical", "EventPsuHardwareError",
             "EventPumpMissing", "EventActivateFailed", "EventActivateTimedout", "EventStandbyFailed",
             "EventSetExecModeFailed", "EventEmergencyShutdownSensorCritical"}
    assert named <= set(faults.BY_EVENT)


def test_names_are_unique_lowercase_and_hyphenated():
    names = [f.name for f in FAULTS]
    assert len(set(names)) == len(names) and len({f.event for f in FAULTS}) == len(FAULTS)
    assert all(re.fullmatch(r"[a-z]+(-[a-z]+)*", n) for n in names), names


def test_warnings_degrade_and_the_rest_stop_runs():
    for f in FAULTS:
        if f.effect is Effect.WARNING:
            assert f.health == "DEGRADED" and f.severity is Severity.WARN and not f.stops_runs, f.name
        elif f.effect in (Effect.CRITICAL, Effect.SHUTDOWN):
            assert f.health.rank > Health.DEGRADED.rank and f.stops_runs, f.name
            assert f.health not in ACTIVATED_HEALTH
        else:
            assert not f.stops_runs, f.name  # a failed transition leaves the lifecycle as it was


@pytest.mark.parametrize("fault", [f for f in FAULTS if f.effect is Effect.TRANSITION], ids=lambda f: f.name)
def test_a_transition_fault_raises_its_transitions_failed_or_timedout_event(fault):
    prefix = {Transition.ACTIVATE: "EventActivate", Transition.STANDBY: "EventStandby",
              Transition.EXECMODE: "EventSetExecMode"}[fault.transition]
    suffix = {Outcome.FAILS: "Failed", Outcome.TIMES_OUT: "Timedout"}[fault.outcome]
    assert fault.event == prefix + suffix
    # The scripts' contract (DESIGN §3): an event type ending in Failed/Timedout means failure.
    assert fault.event.endswith(("Failed", "Timedout"))


def test_every_effect_has_its_rule():
    """A new Effect without its row in faults/rules.py EFFECTS would be a KeyError in the injector
    the first time such a fault is injected: it fails here instead."""
    assert set(EFFECTS) == set(Effect)


def test_only_transition_faults_name_a_transition():
    for f in FAULTS:
        assert (f.transition is not None) == (f.outcome is not None) == (f.effect is Effect.TRANSITION), f.name


def test_a_failed_transition_settles_where_it_started():
    assert faults.SETTLES_AFTER_FAILURE == {Transition.ACTIVATE: Lifecycle.STANDBY.value,
                                            Transition.STANDBY: Lifecycle.ACTIVE.value}
    assert faults.TIMES_OUT_AFTER > 1


def test_an_execmode_failure_also_fails_its_config_op():
    assert BY_NAME["execmode-fails"].also == ("EventConfigOpFailed",)


# -- systemHealth: values, codes, rank -----------------------------------------------------------------


def test_health_values_and_codes_are_the_references():
    codes, _ = reference_health()
    assert {h.value: h.code for h in Health} == codes


def test_health_rank_is_the_references():
    codes, rank = reference_health()
    assert [h.value for h in Health if h.rank is not None] == rank
    # Every value a system reports is ranked; only the client-side ones are not.
    assert set(codes) - set(rank) == {"SYSTEM_NOT_REACHABLE", "ADMIN_SVC_UNKNOWN"}


def test_every_health_the_model_reports_is_ranked():
    for health in HEALTH.values():
        assert health.rank is not None
    for f in FAULTS:
        assert f.health.rank is not None


def test_the_reference_says_which_health_counts_as_activated():
    text = (REFERENCE / "cs2-system-health.tsv").read_text()
    assert '"activated" = systemHealth in (OK, DEGRADED)' in text
    assert ACTIVATED_HEALTH == {"OK", "DEGRADED"}


W, C = BY_NAME["temperature-high-warn"], BY_NAME["temperature-high-critical"]
PSU, PUMP, SHUTDOWN = BY_NAME["psu-hardware-error"], BY_NAME["pump-missing"], BY_NAME["emergency-shutdown"]


@pytest.mark.parametrize("lifecycle, active, expected", [
    ("OK", [], "OK"),
    ("STANDBY", [], "STANDBY"),
    ("PENDING_ACTIVE", [], "PENDING_ACTIVE"),
    ("OK", [W], "DEGRADED"),
    ("OK", [W, BY_NAME["flow-rate-low-warn"]], "DEGRADED"),
    ("STANDBY", [W], "DEGRADED"),  # DEGRADED outranks STANDBY in the reference
    ("PENDING_STANDBY", [W], "DEGRADED"),
    ("OK", [W, C], "CRITICAL"),
    ("OK", [PUMP], "MISSING"),
    ("OK", [PUMP, C], "CRITICAL"),  # CRITICAL outranks MISSING
    ("OK", [C, PSU], "HARDWARE_ERROR"),  # HARDWARE_ERROR is the most severe of all
    ("STANDBY", [SHUTDOWN], "CRITICAL_EMERGENCY_SHUTDOWN"),
    ("STANDBY", [SHUTDOWN, PSU], "HARDWARE_ERROR"),
    ("STANDBY", [BY_NAME["activate-fails"]], "CRITICAL"),
])
def test_the_worst_wins(lifecycle, active, expected):
    assert faults.system_health(lifecycle, active) == expected
    assert faults.system_health(lifecycle, reversed(active)) == expected  # order does not matter


@pytest.mark.parametrize("remaining, event", [
    (None, "EventHealthOk"),
    ("DEGRADED", "EventHealthDegraded"),
    ("MISSING", "EventHealthCritical"),
    ("CRITICAL", "EventHealthCritical"),
    ("CRITICAL_EMERGENCY_SHUTDOWN", "EventHealthCritical"),
    ("HARDWARE_ERROR", "EventHealthCritical"),
])
def test_a_clear_announces_the_health_that_is_left(remaining, event):
    assert faults.health_event(remaining) == event
    implied = reference_events()[event][1]
    if remaining is None:
        assert event == faults.CLEARED_EVENT and implied == "OK"
    else:  # never OK while a fault is left, and DEGRADED exactly when that is what is left
        assert implied != "OK" and (implied == "DEGRADED") == (remaining == "DEGRADED")


def test_health_events_announce_the_health_they_are_named_for():
    ref = reference_events()
    for health, event in faults.HEALTH_EVENTS.items():
        assert ref[event][1] == health


def test_every_event_a_fault_causes_has_its_reference_severity():
    ref = reference_events()
    for event, severity in faults.EVENT_SEVERITIES.items():
        assert ref[event][0] == severity.value, event
    assert {f.event for f in FAULTS} <= set(faults.EVENT_SEVERITIES)
    assert set(faults.HEALTH_EVENTS.values()) <= set(faults.EVENT_SEVERITIES)


# -- names as people type them -----------------------------------------------------------------------


@pytest.mark.parametrize("text", ["psu-hardware-error", "PSU_HARDWARE_ERROR", " Psu Hardware Error ",
                                  "EventPsuHardwareError", "eventpsuhardwareerror"])
def test_a_fault_is_named_in_any_case_or_by_its_event(text):
    assert faults.parse_fault(text) is PSU


def test_an_unknown_fault_names_the_known_ones_and_the_closest():
    with pytest.raises(ValueError) as info:
        faults.parse_fault("psu-hardwre-error")
    message = str(info.value)
    assert "unknown fault 'psu-hardwre-error' (did you mean psu-hardware-error?)" in message
    assert all(f.name in message for f in FAULTS)


@pytest.mark.parametrize("text", ["", "x" * 500, "fire"])
def test_nonsense_is_refused_briefly(text):
    with pytest.raises(ValueError) as info:
        faults.parse_fault(text)
    assert len(str(info.value)) < 600 and "known faults:" in str(info.value)


def test_a_name_that_is_not_text_is_refused():
    with pytest.raises(ValueError, match="unknown fault 7"):
        faults.parse_fault(7)
