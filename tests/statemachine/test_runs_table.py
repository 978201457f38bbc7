"""Runs and the fabric (docs/design.md, "The model"), pinned down rule by rule on a fake clock.

Every (request, run phase) entry of RUN_RULES and every lifecycle entry of OPEN_RULES is
exercised; then program compatibility, descriptors, leases, forced standby, the performance
record, undo and recovery.
"""

from __future__ import annotations

import itertools

import pytest

from csadmin.errors import (
    Busy,
    IncompatibleProgram,
    InvalidState,
    NotFound,
    PermissionDenied,
    ReprogramForbidden,
    RunAborted,
)
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.shared.programs import RunMode, parse_mode, parse_program
from csadmin.statemachine.run_rules import (
    ABORTED,
    CLOSED,
    OPEN_PROGRAMMED,
    OPEN_PROGRAMMING,
    OPEN_RULES,
    OPEN_UNPROGRAMMED,
    PHASES,
    RUN_RULES,
    Already,
    Go,
    Refuse,
)
from csadmin.statemachine.run import Fabric
from csadmin.statemachine.workers import token_digest
from csadmin.shared.states import ExecMode, Lifecycle
from csadmin.shared import ops
from tests.statemachine.fakeclock import START_MS, FakeClock

LEASE_MS = 10_000
RATE = 1_000_000  # bytes per second: 1 MB programs in 1 s
SIZE = 2_000_000  # 2 s of programming
CLIENT = "client-a"
WORKER = "worker-key/0123456789abcdef"  # an input worker, joined before the run reaches its phase
TOKEN = "join-token"


def make_device() -> tuple[Device, FakeClock]:
    clock = FakeClock()
    timings = Timings(activate_ms=5_000, standby_ms=3_000, lease_ms=LEASE_MS, program_bytes_per_second=RATE)
    return Device(clock, timings, serial="CS2-0007"), clock


def program(**changes) -> dict:
    raw = {
        "fingerprint": "sha256:abc", "target_system": "CS2-0007", "execmode": "PIPELINED", "mode": "train",
        "compile_time": 42.0, "est_samples_per_sec": 1000.0, "size_bytes": SIZE,
    }
    raw.update(changes)
    return parse_program(raw)


def phase_of(record: dict) -> str:
    return f"OPEN/{record['fabric']}" if record["status"] == "OPEN" else record["status"]


def in_phase(phase: str):
    """A device with one run in `phase`, reached through public methods only; returns its id."""
    device, clock = make_device()
    run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job-42", workers=2), CLIENT,
                           token_digest(TOKEN))["runId"]
    device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN), WORKER)
    if phase in (OPEN_PROGRAMMING, OPEN_PROGRAMMED):
        device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program()), CLIENT)
    if phase == OPEN_PROGRAMMED:
        clock.tick(SIZE * 1000 // RATE)
        assert device.advance()
    if phase == CLOSED:
        device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)
    if phase == ABORTED:
        device.runs.abort(ops.RUNS_ABORT.request(run_id=run, reason="an admin said so"))
    assert phase_of(device.runs.show(run)) == phase
    return device, clock, run


REQUESTS = {
    "program": lambda d, r: d.runs.program(ops.RUN_PROGRAM.request(run_id=r, program=program()), CLIENT),
    "stream": lambda d, r: d.runs.stream(ops.RUN_STREAM.request(run_id=r, samples=5), CLIENT),
    "heartbeat": lambda d, r: d.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=r), CLIENT),
    "close": lambda d, r: d.runs.close(ops.RUN_CLOSE.request(run_id=r), CLIENT),
    "abort": lambda d, r: d.runs.abort(ops.RUNS_ABORT.request(run_id=r, reason="admin")),
    "join": lambda d, r: d.runs.join(ops.RUN_JOIN.request(run_id=r, token=TOKEN), "second-worker/fedcba9876543210"),
    "leave": lambda d, r: d.runs.leave(ops.RUN_LEAVE.request(run_id=r), WORKER),
}


def test_the_rules_table_covers_every_request_in_every_phase():
    assert set(RUN_RULES) == set(itertools.product(REQUESTS, PHASES))


@pytest.mark.parametrize("request_, phase", sorted(RUN_RULES))
def test_each_run_rule(request_, phase):
    device, clock, run = in_phase(phase)
    rule = RUN_RULES[(request_, phase)]
    before, seq = device.runs.show(run), device.events.last_seq
    if isinstance(rule, Refuse):
        with pytest.raises(rule.error) as info:
            REQUESTS[request_](device, run)
        assert info.value.code == rule.error.code
        assert run in info.value.message and info.value.hint
        assert device.runs.show(run) == before and device.events.last_seq == seq  # a refusal changes nothing
        return
    result = REQUESTS[request_](device, run)
    if isinstance(rule, Already):
        assert result == {**before, "changed": False}
        assert device.runs.show(run) == before and device.events.last_seq == seq
        return
    assert isinstance(rule, Go)
    emitted = [e.type for e in device.events.query(after_seq=seq)]
    expected = {
        "program": ["EventProgrammingStarted"],
        "stream": [],
        "heartbeat": [],
        "close": ["EventTrainingCompleted"],
        "abort": ["EventTrainingAborted"],
        "join": [],
        "leave": [],
    }[request_]
    assert emitted == expected
    if request_ in ("close", "abort"):
        assert device.runs.listing()["runHolder"] is None and device.fabric() == Fabric.UNPROGRAMMED.value


def test_refusals_carry_the_documented_codes():
    assert RUN_RULES[("program", OPEN_PROGRAMMED)].error is ReprogramForbidden
    assert RUN_RULES[("program", OPEN_PROGRAMMING)].error is ReprogramForbidden
    assert RUN_RULES[("program", ABORTED)].error is RunAborted
    assert RUN_RULES[("program", CLOSED)].error is InvalidState
    assert RUN_RULES[("stream", ABORTED)].error is RunAborted


@pytest.mark.parametrize("state", list(Lifecycle))
def test_open_only_when_active(state):
    device, clock = make_device()
    if state is not Lifecycle.ACTIVE:
        device.system.standby(ops.SYSTEM_STANDBY.request())
        if state is not Lifecycle.PENDING_STANDBY:
            clock.tick(3_000)
            device.advance()
            if state is Lifecycle.PENDING_ACTIVE:
                device.system.activate(ops.SYSTEM_ACTIVATE.request())
    assert device.lifecycle is state
    rule = OPEN_RULES[state]
    if isinstance(rule, Go):
        run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.EVAL, owner="job"), CLIENT)
        assert run["runId"] == "run-000001" and device.runs.listing()["runHolder"]["runId"] == run["runId"]
        assert device.events.newest(1)[0].type == "EventTrainingStarted"
        return
    seq = device.events.last_seq
    with pytest.raises(InvalidState) as info:
        device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
    assert state.value in info.value.message and "ACTIVE" in info.value.hint
    assert device.events.last_seq == seq and device.runs.listing() == {"runs": [], "runHolder": None}


def test_a_second_open_is_busy_naming_the_holder_since_when_and_what_to_do():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    with pytest.raises(Busy) as info:
        device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job-43"), "client-b")
    assert info.value.code == "BUSY"
    assert run in info.value.message and "job-42" in info.value.message
    assert "2023-11-14 22:13:20 UTC" in info.value.message  # since when
    assert "runs abort" in info.value.hint


def test_run_ids_are_short_sequential_and_a_new_run_may_open_once_the_last_ended():
    device, clock, run = in_phase(CLOSED)
    second = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
    assert (run, second["runId"]) == ("run-000001", "run-000002")


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"target_system": "CS2-0099"}, "cannot run on another"),
        ({"execmode": "WEIGHT_STREAMING"}, "WEIGHT_STREAMING"),
        ({"mode": "eval"}, "train run"),
        ({"mode": "train_and_eval"}, "train_and_eval, which is not supported"),
    ],
)
def test_incompatible_programs_are_refused_and_change_nothing(changes, words):
    device, clock, run = in_phase(OPEN_UNPROGRAMMED)
    before, seq = device.runs.show(run), device.events.last_seq
    with pytest.raises(IncompatibleProgram) as info:
        device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program(**changes)), CLIENT)
    assert words in info.value.message and info.value.hint
    assert device.runs.show(run) == before and device.events.last_seq == seq
    device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program()),
                        CLIENT)  # the right artifact still programs


def test_programming_takes_time_proportional_to_size_and_then_finishes():
    device, clock, run = in_phase(OPEN_UNPROGRAMMED)
    record = device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program()), CLIENT)
    assert record["fabric"] == "PROGRAMMING" and record["programmingUntil"] == clock.now + 2_000
    assert device.next_deadline() == clock.now + 2_000  # before the lease
    clock.tick(1_999)
    assert not device.advance() and device.runs.show(run)["fabric"] == "PROGRAMMING"
    clock.tick(1)
    assert device.advance() and device.runs.show(run)["fabric"] == "PROGRAMMED"
    finished = device.events.newest(1)[0]
    assert finished.type == "EventProgrammingFinished" and finished.details["programmingTime"] == 2.0


def test_an_empty_program_is_programmed_at_once():
    device, clock, run = in_phase(OPEN_UNPROGRAMMED)
    assert device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program(size_bytes=0)),
                               CLIENT)["fabric"] == "PROGRAMMED"


def test_another_clients_run_is_permission_denied_and_an_unknown_run_not_found():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    for call in (
        lambda: device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program()), "client-b"),
        lambda: device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=1), "client-b"),
        lambda: device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), "client-b"),
        lambda: device.runs.close(ops.RUN_CLOSE.request(run_id=run), "client-b"),
    ):
        with pytest.raises(PermissionDenied):
            call()
    with pytest.raises(NotFound) as info:
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id="run-999999"), CLIENT)
    assert info.value.code == "NOT_FOUND" and "runs list" in info.value.hint
    assert device.runs.show(run)["status"] == "OPEN"


def test_a_run_that_asks_for_no_lease_gets_csds_default_of_60_seconds():
    device = Device(FakeClock())  # the model's own defaults, which csd's settings start from (test_config)
    assert device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["leaseSeconds"] == 60


def test_a_lapsed_lease_aborts_the_run_and_releases_the_fabric():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    clock.tick(LEASE_MS - 1)
    device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)  # renewed: LEASE_MS from now
    assert device.next_deadline() == clock.now + LEASE_MS
    clock.tick(LEASE_MS - 1)
    assert not device.advance() and device.runs.show(run)["status"] == "OPEN"
    clock.tick(1)
    assert device.advance()
    record = device.runs.show(run)
    assert record["status"] == "ABORTED" and "lease expired" in record["abortReason"]
    assert device.runs.listing()["runHolder"] is None and device.next_deadline() is None
    with pytest.raises(RunAborted) as info:
        device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=1), CLIENT)
    assert "lease expired" in info.value.message


def test_a_run_past_its_time_limit_is_aborted_however_alive_it_is():
    """run.open's time_limit_seconds (cstorch's job_time_sec): heartbeats do not extend it."""
    device, clock = make_device()
    run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job", time_limit_seconds=25), CLIENT)
    assert run["timeLimitUntil"] == clock.now + 25_000
    run = run["runId"]
    seq = device.events.last_seq
    for _ in range(2):
        clock.tick(LEASE_MS - 1)
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)
    assert device.next_deadline() == clock.now + 25_000 - 2 * (LEASE_MS - 1)  # the limit, before the lease
    clock.tick(25_000 - 2 * (LEASE_MS - 1) - 1)
    assert not device.advance() and device.runs.show(run)["status"] == "OPEN"
    clock.tick(1)
    assert device.advance()
    record = device.runs.show(run)
    assert (record["status"], record["abortReason"]) == (
        "ABORTED", "time limit exceeded (job_time_sec: the run may last 25 s)")
    aborted = [e for e in device.events.query(after_seq=seq) if e.type == "EventTrainingAborted"]
    assert [e.details["cause"] for e in aborted] == ["time_limit"]
    assert device.runs.listing()["runHolder"] is None and device.next_deadline() is None
    with pytest.raises(RunAborted, match="time limit exceeded"):
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)


def test_stream_and_program_renew_the_lease_too():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    clock.tick(LEASE_MS - 1)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=1), CLIENT)
    clock.tick(LEASE_MS - 1)
    assert not device.advance() and device.runs.show(run)["status"] == "OPEN"


def test_standby_is_busy_while_a_run_holds_the_fabric_and_force_aborts_it():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    seq = device.events.last_seq
    with pytest.raises(Busy) as info:
        device.system.standby(ops.SYSTEM_STANDBY.request())
    assert run in info.value.message and device.lifecycle is Lifecycle.ACTIVE
    assert device.events.last_seq == seq
    result = device.system.standby(ops.SYSTEM_STANDBY.request(force=True))
    assert result["changed"] and device.lifecycle is Lifecycle.PENDING_STANDBY
    record = device.runs.show(run)
    assert record["status"] == "ABORTED" and "--force" in record["abortReason"]
    types = [e.type for e in device.events.query(after_seq=seq)]
    assert types == ["EventTrainingAborted", "EventStandbyIssued", "EventPendingStandby"]
    with pytest.raises(RunAborted):
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)


def test_a_run_closed_by_its_runtime_with_a_reason_ends_aborted():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    record = device.runs.close(ops.RUN_CLOSE.request(run_id=run, reason="runtime failed: OOM"), CLIENT)
    assert record["changed"] and record["status"] == "ABORTED" and record["abortReason"] == "runtime failed: OOM"


def test_performance_record_fields_and_input_bottleneck():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    clock.tick(10_000 - 1)
    device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)
    clock.tick(1)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=9_000),
                       CLIENT)  # 900/s against 1000/s: fed well enough
    assert device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)["performance"] == {
        "compile_time": 42.0,
        "est_samples_per_sec": 1000.0,
        "programming_time": 2.0,
        "samples_per_sec": 900.0,
        "suspected_input_bottleneck": False,
        "total_samples": 9_000,
        "total_time": 10.0,
    }
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    clock.tick(5_000)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=100),
                       CLIENT)  # 20/s against 1000/s: the input is the bottleneck
    performance = device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)["performance"]
    assert performance["samples_per_sec"] == 20.0 and performance["suspected_input_bottleneck"] is True


def test_the_device_consumes_at_most_its_estimated_capacity():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    clock.tick(1_000)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=1_000_000), CLIENT)
    performance = device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)["performance"]
    assert performance["samples_per_sec"] == 1000.0
    assert performance["suspected_input_bottleneck"] is False


def test_the_open_run_shows_in_system_show():
    device, clock, run = in_phase(OPEN_PROGRAMMING)
    assert device.show()["runHolder"] == {
        "runId": run, "owner": "job-42", "since": START_MS, "mode": "train", "fabric": "PROGRAMMING",
        "slurmJob": None, "workers": 1,  # in_phase joined one input worker
    }
    device.runs.abort(ops.RUNS_ABORT.request(run_id=run, reason="x"))
    assert device.show()["runHolder"] is None


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"size_bytes": "big"}, "size_bytes"),
        ({"size_bytes": 1.5}, "size_bytes"),
        ({"size_bytes": -1}, "0 or more"),
        ({"compile_time": True}, "compile_time"),
        ({"est_samples_per_sec": 0}, "more than 0"),
        ({"fingerprint": ""}, "must not be empty"),
        ({"execmode": "SIDEWAYS"}, "execmode"),
        ({"mode": "predict"}, "train or eval"),
        ({"extra": 1}, "unknown field"),
    ],
)
def test_bad_program_descriptors_are_refused_naming_the_field(changes, words):
    raw = {
        "fingerprint": "f", "target_system": "CS2-0007", "execmode": "PIPELINED", "mode": "train",
        "compile_time": 1, "est_samples_per_sec": 1, "size_bytes": 1,
    }
    raw.update(changes)
    with pytest.raises(ValueError, match=words):
        parse_program(raw)
    del raw["fingerprint"]
    with pytest.raises(ValueError, match="lacks fingerprint"):
        parse_program(raw)


def test_program_descriptors_are_normalised():
    p = program(execmode="weight-streaming", mode=" Train ")
    assert p["execmode"] == ExecMode.WEIGHT_STREAMING.value and p["mode"] == "train"


def test_run_modes():
    assert parse_mode("TRAIN") is RunMode.TRAIN and parse_mode("eval") is RunMode.EVAL
    with pytest.raises(ValueError, match="train_and_eval is not supported"):
        parse_mode("train_and_eval")
    with pytest.raises(ValueError, match="train or eval"):
        parse_mode("infer")


def test_a_change_that_raises_undoes_what_the_request_did():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    before, seq = device.runs.listing(), device.events.last_seq
    with pytest.raises(RuntimeError), device.change():
        device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)
        raise RuntimeError("the commit failed")
    assert device.runs.listing() == before and device.events.last_seq == seq
    with pytest.raises(RuntimeError), device.change():
        device.runs.abort(ops.RUNS_ABORT.request(run_id=run, reason="x"))
        device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
        raise RuntimeError("the commit failed")
    assert device.runs.listing() == before and device.events.last_seq == seq
    device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)  # the run numbers were taken back too
    assert device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"] == "run-000002"


def test_recovery_continues_numbering_and_aborts_the_run_left_open():
    device, clock, run = in_phase(CLOSED)
    device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
    records = device.run_book.unsaved()
    device.run_book.saved(records)
    assert device.run_book.unsaved() == []
    fresh, _ = make_device()
    recovery = fresh.recover(device.snapshot(), device.events.query(), records)
    aborted = recovery.aborted_run
    assert aborted["runId"] == "run-000002" and aborted["status"] == "ABORTED"
    assert aborted["abortReason"] == "daemon restarted"
    (written,) = recovery.runs  # the store form of the aborted run: the wire's, and the token's digest
    assert written["runId"] == "run-000002" and written["status"] == "ABORTED" and "joinTokenDigest" in written
    assert {k: v for k, v in written.items() if k not in ("joinTokenDigest", "workers")} == {
        k: v for k, v in fresh.runs.show("run-000002").items() if k not in ("workers", "inputReport")
    }
    assert [e.type for e in recovery.events] == ["EventTrainingAborted"]
    assert fresh.runs.listing()["runHolder"] is None and fresh.events.newest(1)[0].details["reason"] == "daemon restarted"
    assert fresh.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"] == "run-000003"


def test_every_refusal_the_run_rules_name_is_one_csd_may_answer_with():
    refusals = {rule.error for rule in (*RUN_RULES.values(), *OPEN_RULES.values()) if isinstance(rule, Refuse)}
    assert refusals and all(cls.on_wire for cls in refusals | {Busy, NotFound, PermissionDenied, IncompatibleProgram})


@pytest.mark.parametrize("phase", PHASES)
def test_a_dry_run_of_abort_follows_the_rule_and_changes_nothing(phase):
    device, clock, run = in_phase(phase)
    before, seq = device.runs.show(run), device.events.last_seq
    rule = RUN_RULES[("abort", phase)]
    if isinstance(rule, Refuse):
        with pytest.raises(rule.error):
            device.runs.abort(ops.RUNS_ABORT.request(run_id=run, reason="admin", dry_run=True))
    else:
        result = device.runs.abort(ops.RUNS_ABORT.request(run_id=run, reason="admin", dry_run=True))
        assert result["changed"] is isinstance(rule, Go) and result["dryRun"] is True
    assert device.runs.show(run) == before and device.events.last_seq == seq


def test_standby_dry_run_is_busy_while_a_run_holds_the_fabric_and_the_hint_names_force():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    with pytest.raises(Busy) as info:
        device.system.standby(ops.SYSTEM_STANDBY.request(dry_run=True))
    assert "--force" in info.value.hint and run in info.value.hint
    assert device.system.standby(ops.SYSTEM_STANDBY.request(force=True,
                                                            dry_run=True))["changed"] is True and device.runs.show(run)["status"] == "OPEN"


def test_messages_read_as_sentences():
    device, clock, run = in_phase(OPEN_UNPROGRAMMED)
    with pytest.raises(IncompatibleProgram) as info:
        device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program(mode="train_and_eval")), CLIENT)
    assert info.value.message.startswith("The program was compiled for train_and_eval, which is not supported:")
    with pytest.raises(IncompatibleProgram) as info:
        device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program(mode="eval")), CLIENT)
    assert "open an eval run" in info.value.hint
