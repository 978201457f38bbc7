"""Faults in the device model (statemachine/faults/state.py, faults/rules.py, device.py), on an
injected clock: each effect, health as the worst active fault, clearing, schedules, transition
faults, durability (snapshot → recover) and transactions.
"""

from __future__ import annotations

import pytest

from csadmin.errors import FaultActive, InvalidArgument, InvalidState, NotFound, RunAborted, TransitionFailed
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.statemachine.faults import FAULTS, TIMES_OUT_AFTER, Effect
from csadmin.shared.programs import RunMode
from csadmin.shared.states import ExecMode, Lifecycle
from csadmin.shared import ops
from tests.statemachine.fakeclock import FakeClock

ACTIVATE_MS, STANDBY_MS = 5_000, 3_000
TRAIN = RunMode("train")
ADMIN = {"name": "admin", "session": "s1"}


def make() -> tuple[Device, FakeClock]:
    clock = FakeClock()
    return Device(clock, Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS)), clock


def changed(device: Device, action) -> list:
    """Run `action` as one change; the events it emitted, as (type, details)."""
    with device.change() as change:
        action()
    return [(e.type, e.details) for e in change.events]


def settle(device: Device, clock: FakeClock, ms: int) -> list:
    clock.tick(ms)
    return changed(device, device.advance)


def types(events) -> list[str]:
    return [t for t, _ in events]


def test_a_fresh_device_has_no_fault_and_show_lists_none():
    device, _ = make()
    assert device.show()["activeFaults"] == [] and device.show()["systemHealth"] == "OK"


def test_a_warning_degrades_health_names_itself_injected_and_runs_carry_on():
    device, clock = make()
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    events = changed(device, lambda: device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="temperature-high-warn"),
                                                         ADMIN))
    assert events == [("EventSensorTemperatureHighWarn", {
        "fault": "temperature-high-warn", "injected": True, "systemHealth": "DEGRADED",
        "summary": "temperature above its warning threshold", "by": ADMIN})]
    assert device.health.value == "DEGRADED"
    [fault] = device.show()["activeFaults"]
    assert (fault["name"], fault["status"], fault["injected"], fault["health"]) == \
        ("temperature-high-warn", "active", True, "DEGRADED")
    device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run["runId"]), "c1")  # the run carries on
    device.runs.close(ops.RUN_CLOSE.request(run_id=run["runId"]), "c1")
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")  # and new runs may open


@pytest.mark.parametrize("fault", [f for f in FAULTS if f.effect is Effect.CRITICAL], ids=lambda f: f.name)
def test_a_critical_fault_aborts_the_run_naming_it_and_refuses_new_runs(fault):
    device, _ = make()
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    events = changed(device, lambda: device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name=fault.name), ADMIN))
    assert types(events) == [fault.event, "EventTrainingAborted"]
    aborted = events[1][1]
    assert aborted["cause"] == "fault" and aborted["fault"] == fault.name and aborted["injected"] is True
    assert device.health.value == fault.health
    with pytest.raises(RunAborted) as caught:
        device.runs.stream(ops.RUN_STREAM.request(run_id=run["runId"], samples=1), "c1")
    assert caught.value.fault == fault.name and fault.name in caught.value.message
    with pytest.raises(FaultActive) as refused:
        device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    assert refused.value.fault == fault.name and fault.health in refused.value.message
    assert "cs system fault list" in refused.value.hint
    assert device.runs.show(run["runId"])["abortFault"] == fault.name


def test_the_worst_active_fault_sets_health_and_each_clear_announces_what_is_left():
    device, _ = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="temperature-high-warn"))
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="psu-hardware-error"))
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="health-critical"))
    assert device.health.value == "HARDWARE_ERROR"  # ranked above CRITICAL in the reference
    events = changed(device, lambda: device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(name="psu-hardware-error"),
                                                        ADMIN))
    assert events == [("EventHealthCritical", {"fault": "psu-hardware-error", "injected": True,
                                               "systemHealth": "CRITICAL", "cleared": True, "cause": "cleared",
                                               "by": ADMIN})]
    assert types(changed(device,
                         lambda: device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(name="health-critical")))) == ["EventHealthDegraded"]
    last = changed(device,
                   lambda: device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(name="TEMPERATURE_HIGH_WARN")))  # any spelling
    assert types(last) == ["EventHealthOk"] and last[0][1]["systemHealth"] == "OK"
    assert device.show()["activeFaults"] == []


def test_clearing_a_fault_not_present_is_not_found_naming_those_present():
    device, _ = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="pump-missing"))
    with pytest.raises(NotFound, match="present: pump-missing"):
        device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(name="flow-rate-low-warn"))
    with pytest.raises(InvalidArgument, match="did you mean psu-hardware-error"):
        device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="psu-hardware-eror"))


def test_emergency_shutdown_drops_to_standby_at_once_and_refuses_activation_until_cleared():
    device, _ = make()
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    events = changed(device, lambda: device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="emergency-shutdown"),
                                                         ADMIN))
    assert types(events) == ["EventEmergencyShutdownSensorCritical", "EventTrainingAborted",
                             "EventEnteredStandby", "EventStandbyCompleted"]
    assert events[2][1]["cause"] == "fault" and events[3][1]["injected"] is True
    assert device.lifecycle is Lifecycle.STANDBY and device.system.pending_until is None
    assert device.health.value == "CRITICAL_EMERGENCY_SHUTDOWN"
    with pytest.raises(FaultActive, match="emergency-shutdown"):
        device.system.activate(ops.SYSTEM_ACTIVATE.request())
    device.system.standby(ops.SYSTEM_STANDBY.request())  # an admin can always ask for standby (already there: a success)
    changed(device, lambda: device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(all=True)))
    assert device.lifecycle is Lifecycle.STANDBY and device.health.value == "STANDBY"
    device.system.activate(ops.SYSTEM_ACTIVATE.request())


def test_for_clears_a_fault_on_time_and_after_injects_it_on_time():
    device, clock = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="flow-rate-low-warn", for_seconds=2))
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="pump-missing", for_seconds=0.5, after_seconds=1))
    assert device.next_deadline() == clock.now + 1_000
    assert [f["status"] for f in device.faults.listing()] == ["scheduled", "active"]
    fired = settle(device, clock, 1_000)
    assert types(fired) == ["EventPumpMissing"]
    assert fired[0][1]["scheduled"] is True, "its time came: not the answer to a request (issue 26)"
    assert device.health.value == "MISSING"
    assert types(settle(device, clock, 500)) == ["EventHealthDegraded"]
    assert types(settle(device, clock, 500)) == ["EventHealthOk"]
    assert device.faults.listing() == [] and device.next_deadline() is None


def test_injecting_a_fault_already_present_renews_its_end_and_says_whether_it_moved():
    device, clock = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="temperature-high-warn", for_seconds=1))
    same = changed(device, lambda: device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="temperature-high-warn",
                                                                                       for_seconds=1)))
    assert same == []
    clock.tick(500)
    result = device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="temperature-high-warn", for_seconds=1))
    assert result["changed"] is True and device.faults.listing()[0]["until"] == clock.now + 1_000


def test_dry_runs_change_nothing():
    device, _ = make()
    assert changed(device, lambda: device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="psu-hardware-error",
                                                                                       dry_run=True))) == []
    assert device.faults.listing() == []
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="psu-hardware-error"))
    assert device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(all=True,
                                                             dry_run=True))["changed"] is True and len(device.faults.listing()) == 1
    with pytest.raises(FaultActive):
        device.system.activate(ops.SYSTEM_ACTIVATE.request(dry_run=True)) if device.lifecycle is Lifecycle.STANDBY else device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="j"), "c")


def test_a_refused_change_undoes_the_injection_with_everything_else():
    device, _ = make()
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    with pytest.raises(RuntimeError), device.change():
        device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="psu-hardware-error"))
        raise RuntimeError("the commit failed")
    assert device.faults.listing() == [] and device.health.value == "OK" and device.show()["runHolder"] is not None


@pytest.mark.parametrize("name, normal_ms", [("activate-fails", ACTIVATE_MS), ("activate-times-out", ACTIVATE_MS)])
def test_an_armed_activation_fault_fails_the_next_activation_which_settles_in_standby(name, normal_ms):
    device, clock = make()
    device.system.standby(ops.SYSTEM_STANDBY.request())
    settle(device, clock, STANDBY_MS)
    events = changed(device, lambda: device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name=name), ADMIN))
    assert events == [] and device.health.value == "STANDBY"  # armed: nothing happens yet
    assert device.faults.listing()[0]["status"] == "armed"
    issued = changed(device, lambda: device.system.activate(ops.SYSTEM_ACTIVATE.request()))
    assert types(issued) == ["EventActivateIssued", "EventPendingActive"]
    assert issued[1][1]["expectedCompletion"] == clock.now + normal_ms  # what a real system promises
    fails_after = normal_ms if name.endswith("fails") else int(normal_ms * TIMES_OUT_AFTER)
    assert device.system.pending_until == clock.now + fails_after
    assert settle(device, clock, fails_after - 1) == []
    failed = settle(device, clock, 1)
    fault_event = "EventActivateFailed" if name.endswith("fails") else "EventActivateTimedout"
    assert types(failed) == [fault_event] and failed[0][1]["state"] == "STANDBY"
    assert device.lifecycle is Lifecycle.STANDBY and device.health.value == "CRITICAL"
    assert device.system.active_mode is ExecMode.PIPELINED
    # The retry succeeds and clears it.
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    ok = settle(device, clock, ACTIVATE_MS)
    assert types(ok) == ["EventEnteredActive", "EventActivateCompleted", "EventHealthOk"]
    assert device.faults.listing() == [] and device.health.value == "OK"


def test_an_armed_standby_fault_leaves_the_system_active():
    device, clock = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="standby-times-out"))
    device.system.standby(ops.SYSTEM_STANDBY.request())
    failed = settle(device, clock, int(STANDBY_MS * TIMES_OUT_AFTER))
    assert types(failed) == ["EventStandbyTimedout"]
    assert device.lifecycle is Lifecycle.ACTIVE and device.health.value == "CRITICAL"
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")  # a transition fault does not stop runs


def test_an_execmode_fault_refuses_the_change_keeps_its_events_and_changes_nothing():
    device, clock = make()
    device.system.standby(ops.SYSTEM_STANDBY.request())
    settle(device, clock, STANDBY_MS)
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="execmode-fails"))
    with pytest.raises(TransitionFailed) as caught, device.change() as change:
        device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=ExecMode.WEIGHT_STREAMING), ADMIN)
    assert caught.value.fault == "execmode-fails"
    assert [e.type for e in change.events] == ["EventConfigOpIssued", "EventSetExecModeFailed", "EventConfigOpFailed"]
    assert device.system.configured_mode is ExecMode.PIPELINED and device.health.value == "CRITICAL"
    assert types(changed(device,
                         lambda: device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=ExecMode.WEIGHT_STREAMING)))) == [
        "EventConfigOpIssued", "EventSetExecModeWeightStreaming", "EventConfigOpCompleted", "EventHealthOk"]


def test_an_armed_fault_lapses_unused_after_its_for():
    device, clock = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="activate-fails", for_seconds=1))
    assert settle(device, clock, 1_000) == [] and device.faults.listing() == []


def test_faults_survive_a_restart_and_what_fell_due_meanwhile_fires_in_order():
    device, clock = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="temperature-high-warn", for_seconds=5))
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="pump-missing", after_seconds=2))
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="standby-fails"))
    snapshot = device.snapshot()
    events = list(device.events.since(0))
    clock.tick(10_000)  # csd was down for 10 s
    again = Device(clock, Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS))
    recovery = again.recover(snapshot, events, [])
    assert [e.type for e in recovery.events] == ["EventPumpMissing", "EventHealthCritical"]
    assert [(f["name"], f["status"]) for f in again.faults.listing()] == [("standby-fails", "armed"),
                                                                  ("pump-missing", "active")]
    assert again.health.value == "MISSING"


def test_a_restart_during_a_failing_transition_fails_it_rather_than_completing_it():
    device, clock = make()
    device.system.standby(ops.SYSTEM_STANDBY.request())
    settle(device, clock, STANDBY_MS)
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="activate-fails"))
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    snapshot, events = device.snapshot(), list(device.events.since(0))
    again = Device(clock, Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS))
    recovery = again.recover(snapshot, events, [])
    assert [e.type for e in recovery.events] == ["EventActivateFailed"]
    assert again.lifecycle is Lifecycle.STANDBY and again.health.value == "CRITICAL"


SCENARIO = """
description = "warm, then a PSU error in the second run"
[[fault]]
name = "temperature-high-warn"
at = 1
for = 2
[[fault]]
name = "psu-hardware-error"
after_run = 0.5
run = 2
for = 1
"""


def test_a_scenario_schedules_its_steps_from_the_load_and_from_the_runs_it_names():
    device, clock = make()
    result = device.load_scenario(ops.SYSTEM_FAULT_SCENARIO.request(text=SCENARIO, source="warm.toml"), ADMIN)
    assert result["steps"] == ["temperature-high-warn 1 s after the scenario is loaded, for 2 s",
                               "psu-hardware-error 0.5 s after run 2 opens, for 1 s"]
    warm = settle(device, clock, 1_000)
    assert types(warm) == ["EventSensorTemperatureHighWarn"]
    assert warm[0][1]["scenario"] == "warm.toml" and warm[0][1]["line"] == 3 and warm[0][1]["scheduled"] is True
    run1 = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    device.runs.close(ops.RUN_CLOSE.request(run_id=run1["runId"]), "c1")
    assert types(settle(device, clock, 2_000)) == ["EventHealthOk"]
    run2 = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    assert device.faults.scenario()["runsOpened"] == 2 and device.faults.scenario()["waiting"] == []
    assert types(settle(device, clock, 500)) == ["EventPsuHardwareError", "EventTrainingAborted"]
    with pytest.raises(RunAborted):
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run2["runId"]), "c1")
    assert types(settle(device, clock, 1_000)) == ["EventHealthOk"]
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")


def test_loading_another_scenario_cancels_the_steps_still_to_come_and_clear_all_too():
    device, clock = make()
    device.load_scenario(ops.SYSTEM_FAULT_SCENARIO.request(text=SCENARIO, source="a.toml"))
    device.load_scenario(ops.SYSTEM_FAULT_SCENARIO.request(text='[[fault]]\nname = "pump-missing"\nat = 5\n',
                                                           source="b.toml"))
    assert [(f["name"], f["scenario"]) for f in device.faults.listing()] == [("pump-missing", "b.toml")]
    device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(all=True))
    assert device.faults.listing() == [] and settle(device, clock, 10_000) == []


def test_a_bad_scenario_is_invalid_argument_listing_every_line():
    device, _ = make()
    with pytest.raises(InvalidArgument) as caught:
        device.load_scenario(ops.SYSTEM_FAULT_SCENARIO.request(text='[[fault]]\nname = "nope"\nat = 1\n[[fault]]\nname = "pump-missing"\n', source="bad.toml"))
    assert "bad.toml, line 2" in caught.value.message and "bad.toml, line 4" in caught.value.message


def test_the_scenario_survives_a_restart_with_its_run_count():
    device, clock = make()
    device.load_scenario(ops.SYSTEM_FAULT_SCENARIO.request(text=SCENARIO, source="warm.toml"))
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")
    snapshot = device.snapshot()
    again = Device(clock, Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS))
    again.recover(snapshot, list(device.events.since(0)), [])
    assert again.faults.scenario()["runsOpened"] == 1 and len(again.faults.scenario()["waiting"]) == 1


def test_standby_is_never_refused_by_a_fault():
    device, clock = make()
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="psu-hardware-error"))
    device.system.standby(ops.SYSTEM_STANDBY.request())
    settle(device, clock, STANDBY_MS)
    assert device.lifecycle is Lifecycle.STANDBY and device.health.value == "HARDWARE_ERROR"
    with pytest.raises(FaultActive):
        device.system.activate(ops.SYSTEM_ACTIVATE.request())
    with pytest.raises(InvalidState):  # a refusal of the lifecycle's own is unchanged once cleared
        device.clear_fault(ops.SYSTEM_FAULT_CLEAR.request(all=True))
        device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="job"), "c1")


def test_the_revision_moves_with_fault_changes_that_emit_no_event_and_an_undo_takes_it_back():
    device, _ = make()
    before = device.revision
    device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="activate-fails"))  # armed: no event, yet show() changed
    armed = device.revision
    assert armed != before and armed[0] == before[0]
    with pytest.raises(RuntimeError), device.change():
        device.inject_fault(ops.SYSTEM_FAULT_INJECT.request(name="standby-fails"))
        raise RuntimeError("not saved")
    assert device.revision == armed
