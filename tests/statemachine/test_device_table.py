"""The pure device model, pinned down by an explicit table of (lifecycle state, request) outcomes.

docs/design.md, "The model": lifecycle STANDBY -> PENDING_ACTIVE -> ACTIVE -> PENDING_STANDBY -> STANDBY, the
configured/active execution mode, idempotent "already" successes, refusals naming the state,
events from the real catalog, and the bounded, queryable event log.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest

from csadmin.errors import CsError
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.statemachine.events import CATALOG, EventLog
from csadmin.shared.states import ExecMode, Health, Lifecycle
from csadmin.shared import ops
from tests.statemachine.fakeclock import FakeClock

ACTIVATE_MS = 5_000
STANDBY_MS = 3_000

# The real system's event catalog, kept in the repo so the suite runs from any clone;
# test_reference_copy_is_current checks it against the project's reference data when a
# `shared/reference/` folder sits beside the clone's parent (the project's own machines).
EVENTS_TSV = Path(__file__).resolve().parents[1] / "reference" / "cs2-events.tsv"
SHARED_TSV = Path(__file__).resolve().parents[3] / "shared" / "reference" / "cs2-events.tsv"

S = Lifecycle.STANDBY
PA = Lifecycle.PENDING_ACTIVE
A = Lifecycle.ACTIVE
PS = Lifecycle.PENDING_STANDBY
WS = ExecMode.WEIGHT_STREAMING
PIP = ExecMode.PIPELINED


def make_device(clock: FakeClock | None = None, **kwargs) -> tuple[Device, FakeClock]:
    clock = clock if clock is not None else FakeClock()
    device = Device(clock, Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS), **kwargs)
    return device, clock


def put_in_state(state: Lifecycle) -> tuple[Device, FakeClock]:
    """A device in `state`, reached through public methods only (fresh device is ACTIVE)."""
    device, clock = make_device()
    if state is A:
        pass
    elif state is PS:
        device.system.standby(ops.SYSTEM_STANDBY.request())
    elif state is S:
        device.system.standby(ops.SYSTEM_STANDBY.request())
        clock.tick(STANDBY_MS)
        assert device.advance() is True
    elif state is PA:
        device.system.standby(ops.SYSTEM_STANDBY.request())
        clock.tick(STANDBY_MS)
        assert device.advance() is True
        device.system.activate(ops.SYSTEM_ACTIVATE.request())
    else:  # pragma: no cover
        raise AssertionError(state)
    assert device.lifecycle is state
    # Let some time pass that does not complete anything, so "now" differs from the setup's.
    clock.tick(1)
    assert device.advance() is False
    assert device.lifecycle is state
    return device, clock


# -- the table -----------------------------------------------------------------------------------

REQUESTS = {
    "standby": lambda d: d.system.standby(ops.SYSTEM_STANDBY.request()),
    "activate": lambda d: d.system.activate(ops.SYSTEM_ACTIVATE.request()),
    "setup_execmode(WEIGHT_STREAMING)": lambda d: d.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS)),
    "setup_execmode(PIPELINED)": lambda d: d.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=PIP)),
}


def go(new_state: Lifecycle, events: list[str], pending_ms: int | None):
    return ("go", new_state, events, pending_ms)


def already(message: str):
    return ("already", message)


REFUSED = ("refused",)

# (state, request) -> expected outcome. In STANDBY the configured mode is PIPELINED (the fresh
# device's), so configuring PIPELINED again is an idempotent success.
TABLE = {
    (S, "standby"): already("System is already in STANDBY."),
    (S, "activate"): go(PA, ["EventActivateIssued", "EventPendingActive"], ACTIVATE_MS),
    (S, "setup_execmode(WEIGHT_STREAMING)"): go(
        S, ["EventConfigOpIssued", "EventSetExecModeWeightStreaming", "EventConfigOpCompleted"], None
    ),
    (S, "setup_execmode(PIPELINED)"): already("Execution mode is already configured as PIPELINED."),
    (PA, "standby"): REFUSED,
    (PA, "activate"): REFUSED,
    (PA, "setup_execmode(WEIGHT_STREAMING)"): REFUSED,
    (PA, "setup_execmode(PIPELINED)"): REFUSED,
    (A, "standby"): go(PS, ["EventStandbyIssued", "EventPendingStandby"], STANDBY_MS),
    (A, "activate"): already("System is already in ACTIVE."),
    (A, "setup_execmode(WEIGHT_STREAMING)"): REFUSED,
    (A, "setup_execmode(PIPELINED)"): REFUSED,
    (PS, "standby"): REFUSED,
    (PS, "activate"): REFUSED,
    (PS, "setup_execmode(WEIGHT_STREAMING)"): REFUSED,
    (PS, "setup_execmode(PIPELINED)"): REFUSED,
}


def test_table_covers_every_state_and_request():
    assert set(TABLE) == set(itertools.product(Lifecycle, REQUESTS))
    assert len(TABLE) == 16


def _names_state(message: str, state: Lifecycle) -> bool:
    # Word-ish match: "ACTIVE" must not be satisfied by "PENDING_ACTIVE".
    return re.search(rf"(?<![A-Z_]){state.value}(?![A-Z_])", message) is not None


@pytest.mark.parametrize(
    "state,request_name",
    sorted(TABLE, key=lambda k: (list(Lifecycle).index(k[0]), list(REQUESTS).index(k[1]))),
    ids=lambda v: v.value if isinstance(v, Lifecycle) else v,
)
def test_request_table(state, request_name):
    device, clock = put_in_state(state)
    expected = TABLE[(state, request_name)]
    before_snapshot = device.snapshot()
    before_seq = device.events.last_seq
    before_len = len(device.events)
    now = clock.now

    if expected[0] == "refused":
        with pytest.raises(CsError) as info:
            REQUESTS[request_name](device)
        err = info.value
        assert err.code == "INVALID_STATE"
        assert _names_state(err.message, state), err.message
        assert str(err) == f"{err.message} {err.hint}"  # what a runtime printing it reads
        assert isinstance(err.hint, str) and err.hint.strip()
        # Nothing changed, nothing emitted.
        assert device.snapshot() == before_snapshot
        assert device.events.last_seq == before_seq
        assert len(device.events) == before_len
        return

    result = REQUESTS[request_name](device)
    emitted = device.events.query(after_seq=before_seq)

    if expected[0] == "already":
        _, message = expected
        assert result["changed"] is False
        assert result["message"] == message
        assert result["state"] == state.value
        assert device.lifecycle is state
        assert device.snapshot() == before_snapshot
        assert emitted == []
        assert device.events.last_seq == before_seq
        return

    assert expected[0] == "go"
    _, new_state, event_types, pending_ms = expected
    assert result["changed"] is True
    assert isinstance(result["message"], str) and result["message"]
    assert result["state"] == new_state.value
    assert device.lifecycle is new_state
    assert [e.type for e in emitted] == event_types
    assert [e.seq for e in emitted] == list(range(before_seq + 1, before_seq + 1 + len(event_types)))
    assert all(e.triggerTime == now for e in emitted)
    expected_pending = None if pending_ms is None else now + pending_ms
    assert device.system.pending_until == expected_pending
    assert result["pendingUntil"] == expected_pending
    assert device.next_deadline() == expected_pending
    for e in emitted:
        if e.type.startswith("EventPending"):
            assert e.details["expectedCompletion"] == expected_pending


def test_setup_execmode_in_standby_with_weight_streaming_configured():
    """The 'already' row depends on the configured mode: once WS is configured, WS is the no-op."""
    device, _ = put_in_state(S)
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    before = device.events.last_seq
    result = device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    assert result["changed"] is False
    assert result["message"] == "Execution mode is already configured as WEIGHT_STREAMING."
    assert device.events.last_seq == before
    result = device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=PIP))
    assert result["changed"] is True
    assert [e.type for e in device.events.query(after_seq=before)] == [
        "EventConfigOpIssued",
        "EventSetExecModePipelined",
        "EventConfigOpCompleted",
    ]
    assert device.system.configured_mode is PIP


# -- time ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("pending", [PA, PS], ids=lambda s: s.value)
def test_timed_completion_exactly_at_pending_until(pending):
    device, clock = put_in_state(pending)
    deadline = device.system.pending_until
    assert deadline is not None
    before = device.events.last_seq

    clock.now = deadline - 1
    assert device.advance() is False
    assert device.lifecycle is pending
    assert device.system.pending_until == deadline
    assert device.events.last_seq == before

    clock.now = deadline
    assert device.advance() is True
    settled = A if pending is PA else S
    assert device.lifecycle is settled
    assert device.system.pending_until is None
    emitted = device.events.query(after_seq=before)
    if pending is PA:
        assert [e.type for e in emitted] == ["EventEnteredActive", "EventActivateCompleted"]
    else:
        assert [e.type for e in emitted] == ["EventEnteredStandby", "EventStandbyCompleted"]
    assert all(e.triggerTime == deadline for e in emitted)
    assert all(e.details["recovered"] is False for e in emitted)

    # Nothing more to do.
    clock.tick(100_000)
    assert device.advance() is False
    assert device.events.last_seq == before + 2


def test_pending_durations_come_from_timings():
    clock = FakeClock()
    device = Device(clock, Timings(activate_ms=7, standby_ms=11))
    device.system.standby(ops.SYSTEM_STANDBY.request())
    assert device.system.pending_until == clock.now + 11
    clock.now = device.system.pending_until
    assert device.advance()
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    assert device.system.pending_until == clock.now + 7


def test_activation_completes_into_configured_mode():
    device, clock = put_in_state(S)
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    assert device.system.configured_mode is WS
    assert device.system.active_mode is PIP
    assert device.system.execmode() == {
        "execmode": "WEIGHT_STREAMING",
        "activeExecmode": "PIPELINED",
        "takesEffectOnActivate": True,
    }
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    # Still rebooting: the old mode is active until completion.
    assert device.system.active_mode is PIP
    clock.now = device.system.pending_until
    assert device.advance()
    assert device.lifecycle is A
    assert device.system.active_mode is device.system.configured_mode is WS
    assert device.system.execmode()["takesEffectOnActivate"] is False
    completed = device.events.query(event_type="EventActivateCompleted")[-1]
    assert completed.details["execmode"] == "WEIGHT_STREAMING"


def test_five_step_admin_procedure():
    """The admin's procedure: show, standby, setup, activate -> ACTIVE in WEIGHT_STREAMING."""
    device, clock = make_device()
    assert device.system.execmode()["execmode"] == "PIPELINED"
    device.system.standby(ops.SYSTEM_STANDBY.request())
    clock.now = device.next_deadline()
    device.advance()
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=ExecMode.parse("weight-streaming")))
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    clock.now = device.next_deadline()
    device.advance()
    shown = device.show()
    assert shown["state"] == "ACTIVE"
    assert shown["systemHealth"] == "OK"
    assert shown["activeExecmode"] == shown["configuredExecmode"] == "WEIGHT_STREAMING"


# -- recovery ------------------------------------------------------------------------------------


def restarted(device: Device, clock) -> tuple[Device, object]:
    """What csd does at start: a fresh device recovered from what `device` would have stored."""
    fresh = Device(clock, Timings(activate_ms=ACTIVATE_MS, standby_ms=STANDBY_MS))
    snap = json.loads(json.dumps(device.snapshot()))  # through JSON, as the store keeps it
    return fresh, fresh.recover(snap, device.events.query(), [])


@pytest.mark.parametrize("pending", [PA, PS], ids=lambda s: s.value)
def test_recover_rolls_pending_forward_immediately(pending):
    device, clock = put_in_state(pending)
    now = clock.now
    assert now < device.system.pending_until
    before = device.events.last_seq
    device, recovery = restarted(device, clock)
    assert recovery.rolled_forward is device.lifecycle is SETTLED[pending] and recovery.needs_commit
    assert device.system.pending_until is None
    emitted = device.events.query(after_seq=before)
    assert recovery.events == emitted
    if pending is PA:
        assert [e.type for e in emitted] == ["EventEnteredActive", "EventActivateCompleted"]
        assert device.system.active_mode is device.system.configured_mode
    else:
        assert [e.type for e in emitted] == ["EventEnteredStandby", "EventStandbyCompleted"]
    assert emitted and all(e.details["recovered"] is True for e in emitted)
    assert all(e.triggerTime == now for e in emitted)
    device, recovery = restarted(device, clock)
    assert recovery.rolled_forward is None and not recovery.needs_commit
    assert device.events.last_seq == before + 2


SETTLED = {PA: A, PS: S}


def test_recover_after_mode_change_activates_configured_mode():
    device, clock = put_in_state(S)
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    device, recovery = restarted(device, clock)
    assert recovery.rolled_forward is A
    assert device.lifecycle is A
    assert device.system.active_mode is WS


@pytest.mark.parametrize("state", [S, A], ids=lambda s: s.value)
def test_recover_in_settled_state_is_a_no_op(state):
    old, clock = put_in_state(state)
    device, recovery = restarted(old, clock)
    assert (recovery.fresh, recovery.rolled_forward, recovery.aborted_run) == (False, None, None)
    assert recovery.events == [] and recovery.runs == [] and not recovery.needs_commit
    assert device.snapshot() == old.snapshot()
    assert device.events.last_seq == old.events.last_seq


def test_a_new_system_is_recovered_from_nothing_and_written_at_once():
    clock = FakeClock()
    device = Device(clock)
    recovery = device.recover(None, [], [])
    assert recovery.fresh and recovery.needs_commit and recovery.events == []
    assert device.lifecycle is A and device.serial == "CS2-0001"


# -- persistence ---------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [S, A], ids=lambda s: s.value)
@pytest.mark.parametrize("configure_ws", [False, True], ids=["pipelined", "ws-configured"])
def test_a_snapshot_comes_back_the_same_at_start(state, configure_ws):
    device, clock = make_device(serial="CS2-0042")
    if configure_ws or state is S:
        device.system.standby(ops.SYSTEM_STANDBY.request())
        clock.now = device.system.pending_until
        device.advance()
    if configure_ws:
        device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
        if state is A:
            device.system.activate(ops.SYSTEM_ACTIVATE.request())
            clock.now = device.system.pending_until
            device.advance()
    assert device.lifecycle is state
    other, _ = restarted(device, clock)
    assert other.lifecycle is device.lifecycle
    assert other.system.configured_mode is device.system.configured_mode
    assert other.system.active_mode is device.system.active_mode
    assert other.system.pending_until is None
    assert other.serial == "CS2-0042"
    assert other.health is device.health
    assert other.snapshot() == device.snapshot()


def test_snapshot_in_mid_configuration_keeps_both_modes():
    device, clock = put_in_state(S)
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    snap = device.snapshot()
    assert snap["configuredExecmode"] == "WEIGHT_STREAMING"
    assert snap["activeExecmode"] == "PIPELINED"
    other, _ = restarted(device, clock)
    assert other.system.configured_mode is WS
    assert other.system.active_mode is PIP
    assert other.system.execmode()["takesEffectOnActivate"] is True


# -- fresh device, health ------------------------------------------------------------------------


def test_fresh_device():
    device, clock = make_device()
    assert device.lifecycle is A
    assert device.system._fsm.state == "ACTIVE"  # the transitions machine's own field (statemachine/lifecycle.py)
    assert device.system.configured_mode is PIP
    assert device.system.active_mode is PIP
    assert device.serial == "CS2-0001"
    assert device.health is Health.OK
    assert device.system.pending_until is None
    assert device.next_deadline() is None
    assert len(device.events) == 0
    shown = device.show()
    assert shown["systemType"] == "cs2"
    assert shown["serial"] == "CS2-0001"
    assert shown["state"] == "ACTIVE"
    assert shown["systemHealth"] == "OK"
    assert shown["activeExecmode"] == shown["configuredExecmode"] == "PIPELINED"
    assert shown["pendingUntil"] is None
    assert shown["time"] == clock.now


def test_fresh_device_with_configured_serial():
    device, _ = make_device(serial="CS2-0777")
    assert device.serial == "CS2-0777"
    assert device.show()["serial"] == "CS2-0777"


@pytest.mark.parametrize(
    "state,health",
    [(A, Health.OK), (S, Health.STANDBY), (PA, Health.PENDING_ACTIVE), (PS, Health.PENDING_STANDBY)],
    ids=lambda v: v.value,
)
def test_health_follows_lifecycle(state, health):
    device, _ = put_in_state(state)
    assert device.health is health
    assert device.show()["systemHealth"] == health.value
    assert device.show()["state"] == state.value


# -- ExecMode.parse ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,mode",
    [
        ("WEIGHT_STREAMING", WS),
        ("weight-streaming", WS),
        ("Weight Streaming", WS),
        ("weight_streaming", WS),
        ("  WEIGHT-STREAMING ", WS),
        ("pipelined", PIP),
        ("PIPELINED", PIP),
        ("Pipelined", PIP),
    ],
)
def test_execmode_parse_accepts(text, mode):
    assert ExecMode.parse(text) is mode


@pytest.mark.parametrize("text", ["bogus", "", "weight", "pipelined!"])
def test_execmode_parse_rejects(text):
    with pytest.raises(ValueError) as info:
        ExecMode.parse(text)
    message = str(info.value)
    assert "PIPELINED" in message
    assert "WEIGHT_STREAMING" in message


def test_execmode_parse_rejection_names_the_input():
    with pytest.raises(ValueError, match="bogus"):
        ExecMode.parse("bogus")


def test_execmode_titles():
    assert WS.title == "Weight Streaming"
    assert PIP.title == "Pipelined"


# -- no shortcuts --------------------------------------------------------------------------------


def test_no_auto_transition_shortcuts():
    device, _ = make_device()
    system = device.system._fsm  # the machine's model (statemachine/lifecycle.py)
    for model in (device, system):
        for state in Lifecycle:
            assert not hasattr(model, f"to_{state.value}"), f"to_{state.value} exists"
    assert device.system._machine.auto_transitions is False


def test_internal_triggers_respect_sources():
    """The transitions machine itself refuses a transition from the wrong state."""
    from transitions import MachineError

    device, _ = make_device()  # ACTIVE
    with pytest.raises(MachineError):
        device.system._fsm.settle()  # ACTIVE is not pending: nothing to settle
    with pytest.raises(MachineError):
        device.system._fsm.begin_activate()
    assert device.lifecycle is A


# -- event catalog -------------------------------------------------------------------------------


def _reference_severities() -> dict[str, str]:
    table = {}
    for line in EVENTS_TSV.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        assert len(fields) >= 2, line
        table[fields[0]] = fields[1]
    return table


def test_reference_file_parses():
    ref = _reference_severities()
    assert ref["EventActivateIssued"] == "INFO"
    assert ref["EventTrainingAborted"] == "WARN"
    assert len(ref) > 20


def test_catalog_matches_reference():
    ref = _reference_severities()
    for type_, severity in CATALOG.items():
        assert type_ in ref, f"{type_} is not a real event type"
        assert severity.value == ref[type_], type_


def test_every_emitted_event_is_catalogued_with_reference_severity():
    ref = _reference_severities()
    device, clock = make_device()
    # Exercise every path that emits: standby, advance, setup (both modes), activate, recover.
    device.system.standby(ops.SYSTEM_STANDBY.request())
    clock.now = device.system.pending_until
    device.advance()
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=PIP))
    device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS))
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    device, _ = restarted(device, clock)
    device.system.standby(ops.SYSTEM_STANDBY.request())
    device, _ = restarted(device, clock)
    device.system.activate(ops.SYSTEM_ACTIVATE.request())
    clock.now = device.system.pending_until
    device.advance()
    events = device.events.query()
    types = {e.type for e in events}
    assert types >= {
        "EventStandbyIssued",
        "EventPendingStandby",
        "EventEnteredStandby",
        "EventStandbyCompleted",
        "EventActivateIssued",
        "EventPendingActive",
        "EventEnteredActive",
        "EventActivateCompleted",
        "EventSetExecModePipelined",
        "EventSetExecModeWeightStreaming",
        "EventConfigOpIssued",
        "EventConfigOpCompleted",
    }
    for e in events:
        assert e.type in CATALOG
        assert e.severity == CATALOG[e.type].value == ref[e.type]
        assert e.to_dict()["severity"] == ref[e.type]
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(events) + 1))


# -- EventLog ------------------------------------------------------------------------------------


def _filled_log(capacity: int = 1000) -> EventLog:
    log = EventLog(capacity=capacity)
    log.emit("EventStandbyIssued", 100)
    log.emit("EventPendingStandby", 100)
    log.emit("EventEnteredStandby", 200)
    log.emit("EventStandbyCompleted", 200)
    log.emit("EventActivateIssued", 300)
    log.emit("EventPendingActive", 300)
    log.emit("EventEnteredActive", 400)
    log.emit("EventActivateCompleted", 400)
    return log


def test_query_all_in_seq_order():
    log = _filled_log()
    events = log.query()
    assert [e.seq for e in events] == list(range(1, 9))
    assert log.last_seq == 8
    assert len(log) == 8


def test_query_glob_on_event_type():
    log = _filled_log()
    assert [e.type for e in log.query(event_type="EventActivate*")] == [
        "EventActivateIssued",
        "EventActivateCompleted",
    ]
    assert [e.type for e in log.query(event_type="Event*Standby")] == [
        "EventPendingStandby",
        "EventEnteredStandby",
    ]
    assert [e.type for e in log.query(event_type="EventPendingActive")] == ["EventPendingActive"]
    assert log.query(event_type="EventNope*") == []
    # Case-sensitive like the real type names.
    assert log.query(event_type="eventactivate*") == []


def test_query_from_time_is_inclusive():
    log = _filled_log()
    assert [e.seq for e in log.query(from_time=300)] == [5, 6, 7, 8]
    assert [e.seq for e in log.query(from_time=301)] == [7, 8]
    assert [e.seq for e in log.query(from_time=0)] == list(range(1, 9))
    assert log.query(from_time=401) == []


def test_query_max_count_returns_newest_ascending():
    log = _filled_log()
    assert [e.seq for e in log.query(max_count=3)] == [6, 7, 8]
    assert [e.seq for e in log.query(max_count=1)] == [8]
    assert [e.seq for e in log.query(max_count=100)] == list(range(1, 9))
    assert log.query(max_count=0) == []
    # Combined with filters: the newest N of the matching events.
    assert [e.type for e in log.query(event_type="Event*Issued", max_count=1)] == ["EventActivateIssued"]
    assert [e.seq for e in log.query(from_time=200, max_count=2)] == [7, 8]


def test_query_after_seq():
    log = _filled_log()
    assert [e.seq for e in log.query(after_seq=5)] == [6, 7, 8]
    assert [e.seq for e in log.query(after_seq=0)] == list(range(1, 9))
    assert log.query(after_seq=8) == []
    assert [e.seq for e in log.query(after_seq=2, event_type="EventActivate*", max_count=1)] == [8]


def test_capacity_drops_oldest():
    log = _filled_log(capacity=3)
    assert len(log) == 3
    assert [e.seq for e in log.query()] == [6, 7, 8]
    assert log.last_seq == 8
    e = log.emit("EventStandbyIssued", 500)
    assert e.seq == 9
    assert [e.seq for e in log.query()] == [7, 8, 9]


def test_newest():
    log = _filled_log()
    assert [e.seq for e in log.newest(3)] == [6, 7, 8]
    assert [e.seq for e in log.newest(1)] == [8]
    assert [e.seq for e in log.newest(8)] == list(range(1, 9))
    assert [e.seq for e in log.newest(50)] == list(range(1, 9))
    assert log.newest(0) == []
    assert log.newest(-1) == []
    assert EventLog().newest(3) == []


def test_a_rollback_takes_back_the_events_since_its_savepoint_and_their_seqs():
    log = _filled_log()
    savepoint = log.savepoint()
    log.emit("EventStandbyIssued", 900)
    log.emit("EventPendingStandby", 900)
    assert [e.seq for e in log.since(8)] == [9, 10]
    log.rollback(savepoint)
    log.release(savepoint)
    assert (len(log), log.last_seq) == (8, 8)
    assert [e.seq for e in log.query()] == list(range(1, 9))
    assert log.emit("EventStandbyIssued", 900).seq == 9  # the taken-back numbers are used again


def test_nothing_leaves_the_window_while_a_change_is_open_so_a_rollback_restores_it():
    log = _filled_log(capacity=8)
    kept = log.query()
    savepoint = log.savepoint()
    for _ in range(3):
        log.emit("EventStandbyIssued", 900)
    assert [e.seq for e in log.query()] == list(range(1, 12))  # cut back only when the change ends
    log.rollback(savepoint)
    log.release(savepoint)
    assert log.query() == kept and log.last_seq == 8
    savepoint = log.savepoint()
    for _ in range(3):
        log.emit("EventStandbyIssued", 900)
    log.release(savepoint)
    assert [e.seq for e in log.query()] == list(range(4, 12))  # kept: the window moves on


def test_nested_savepoints_take_back_only_their_own_events():
    log = _filled_log(capacity=9)
    outer = log.savepoint()
    log.emit("EventStandbyIssued", 900)  # seq 9
    inner = log.savepoint()
    log.emit("EventPendingStandby", 900)  # seq 10, pushes seq 1 out
    log.rollback(inner)
    log.release(inner)
    assert [e.seq for e in log.query()] == list(range(1, 10))
    log.rollback(outer)
    log.release(outer)
    assert [e.seq for e in log.query()] == list(range(1, 9)) and log.last_seq == 8


def test_emit_event_fields_and_round_trip():
    log = EventLog()
    e = log.emit("EventPendingActive", 1234, execmode="PIPELINED", expectedCompletion=6234)
    assert e.seq == 1
    assert e.type == "EventPendingActive"
    assert e.severity == "INFO"
    assert e.triggerTime == 1234
    assert e.details == {"execmode": "PIPELINED", "expectedCompletion": 6234}
    from csadmin.statemachine.events import Event

    assert Event.from_dict(json.loads(json.dumps(e.to_dict()))) == e


def test_emit_unknown_type_is_rejected():
    log = EventLog()
    with pytest.raises(KeyError):
        log.emit("EventNotInCatalog", 0)
    assert len(log) == 0


def test_rejected_emit_does_not_consume_a_seq():
    log = EventLog()
    log.emit("EventStandbyIssued", 0)
    with pytest.raises(KeyError):
        log.emit("EventNotInCatalog", 0)
    assert log.last_seq == 1
    assert log.emit("EventStandbyIssued", 0).seq == 2


def test_restore_continues_seq():
    log = _filled_log()
    kept = log.query()
    fresh = EventLog()
    fresh.restore(kept)
    assert fresh.last_seq == 8
    assert [e.seq for e in fresh.query()] == list(range(1, 9))
    assert fresh.emit("EventStandbyIssued", 1000).seq == 9


def test_reference_copy_is_current():
    """The repo's copy of the real event catalog matches the project's reference data, when present."""
    if SHARED_TSV.exists():
        assert EVENTS_TSV.read_text() == SHARED_TSV.read_text()
    assert "EventActivateCompleted\tINFO" in EVENTS_TSV.read_text()


DRY_RUNS = {
    "standby": lambda d: d.system.standby(ops.SYSTEM_STANDBY.request(dry_run=True)),
    "activate": lambda d: d.system.activate(ops.SYSTEM_ACTIVATE.request(dry_run=True)),
    "setup_execmode(WEIGHT_STREAMING)": lambda d: d.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=WS,
                                                                                                            dry_run=True)),
    "setup_execmode(PIPELINED)": lambda d: d.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=PIP,
                                                                                                     dry_run=True)),
}


@pytest.mark.parametrize("state,request_name", sorted(TABLE, key=str), ids=str)
def test_a_dry_run_says_what_the_request_would_do_and_changes_nothing(state, request_name):
    """What the console checks before asking for confirmation: the same rule, the same
    refusal or "already" message, and nothing changed or emitted."""
    device, clock = put_in_state(state)
    expected = TABLE[(state, request_name)]
    before, seq = device.snapshot(), device.events.last_seq
    if expected[0] == "refused":
        with pytest.raises(CsError) as dry:
            DRY_RUNS[request_name](device)
        with pytest.raises(CsError) as real:
            REQUESTS[request_name](device)
        assert (dry.value.message, dry.value.hint) == (real.value.message, real.value.hint)
        return
    result = DRY_RUNS[request_name](device)
    assert device.snapshot() == before and device.events.last_seq == seq
    assert result["changed"] is (expected[0] == "go") and result["dryRun"] is True
    if expected[0] == "already":
        assert result["message"] == expected[1]
