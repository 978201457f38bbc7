"""Input workers in the model (statemachine/workers.py, runs.py): on a fake clock, each sample
counted once in the run's total and in its feeder's, undone with a change, the lease kept the
opener's, silent workers reported, the breakdown and report pure functions of the run."""

from __future__ import annotations

import pytest

from csadmin import errors
from csadmin.shared.programs import RunMode
from csadmin.statemachine.run import Run
from csadmin.statemachine.workers import token_digest, token_matches
from csadmin.shared import ops
from tests.statemachine.test_runs_table import CLIENT, LEASE_MS, in_phase, OPEN_PROGRAMMED, TOKEN, WORKER

SECOND = "second-worker/fedcba9876543210"


def sums(record: dict) -> None:
    assert sum(w["samples"] for w in record["workers"]) == record["totalSamples"]


def test_each_sample_is_counted_once_in_the_total_and_its_feeders_row():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN, name="fast"), SECOND)
    clock.tick(1_000)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=30), WORKER)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=60), SECOND)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=10), CLIENT)
    record = device.runs.show(run)
    sums(record)
    rows = {w["name"]: w for w in record["workers"]}
    assert {n: r["samples"] for n, r in rows.items()} == {"job-42": 10, "worker-1": 30, "fast": 60}
    assert rows["fast"]["share"] == 0.6 and rows["fast"]["samplesPerSec"] == 60.0
    # fair share is 1/3: below half of it (< 16.7 of 100 samples) is slow
    assert record["inputReport"]["slow"] == ["job-42"]
    closed = device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)
    sums(closed)
    assert closed["performance"]["total_samples"] == 100


def test_a_refused_or_undone_stream_counts_nothing():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=5), WORKER)
    with pytest.raises(RuntimeError), device.change():
        device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=100), WORKER)
        raise RuntimeError("the commit failed")
    record = device.runs.show(run)
    assert record["totalSamples"] == 5 and [w["samples"] for w in record["workers"]] == [5]
    with pytest.raises(errors.PermissionDenied):
        device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=7), "stranger/0000000000000000")
    sums(device.runs.show(run))


def test_the_lease_is_the_openers_and_a_silent_worker_is_lost():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    lease_until = device.runs.show(run)["leaseUntil"]
    clock.tick(LEASE_MS // 2)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=1), WORKER)
    assert device.runs.show(run)["leaseUntil"] == lease_until, "a worker does not keep the run alive"
    for step in (LEASE_MS // 2, LEASE_MS // 2 + 1):  # the opener beats within its lease; the worker is silent
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)
        clock.tick(step)
        assert not device.advance()
    record = device.runs.show(run)
    assert record["status"] == "OPEN"
    assert [(w["name"], w["status"]) for w in record["workers"]] == [("worker-1", "LOST")]
    assert record["inputReport"]["lost"] == ["worker-1"] and "1 worker slot never joined" in record["inputReport"]["message"]
    device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), WORKER)  # it comes back
    assert device.runs.show(run)["workers"][0]["status"] == "ACTIVE"


def test_joining_is_checked_and_idempotent():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    again = device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN), WORKER)
    assert again["changed"] is False and again["worker"] == "worker-1"
    with pytest.raises(errors.InvalidArgument):
        device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN, name="worker-1"),
                         SECOND)  # another feeder's name
    with pytest.raises(errors.PermissionDenied):
        device.runs.join(ops.RUN_JOIN.request(run_id=run, token="wrong"), SECOND)
    device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN), SECOND)
    with pytest.raises(errors.Busy):
        device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN), "third/0000000000000000")
    # a run opened without slots admits nobody, whatever the token
    device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)
    other = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
    with pytest.raises(errors.PermissionDenied):
        device.runs.join(ops.RUN_JOIN.request(run_id=other, token=TOKEN), SECOND)


def test_workers_and_the_digest_survive_the_store_form_but_not_the_wire():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    device.runs.stream(ops.RUN_STREAM.request(run_id=run, samples=3), WORKER)
    (stored,) = [r for r in device.run_book.unsaved() if r["runId"] == run]
    assert token_matches(TOKEN, stored["joinTokenDigest"]) and stored["joinTokenDigest"] == token_digest(TOKEN)
    assert "joinTokenDigest" not in device.runs.show(run)
    back = Run.from_dict(stored)
    assert back.workers[WORKER].samples == 3 and back.token_digest == token_digest(TOKEN)
    assert not token_matches(TOKEN, None)


def test_slots_may_be_asked_for_at_program_time_once():
    from tests.statemachine.test_runs_table import make_device, program

    device, clock = make_device()
    run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
    with pytest.raises(errors.PermissionDenied):
        device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN), SECOND)  # no slots yet
    record = device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program(), workers=2), CLIENT,
                                 token_digest(TOKEN))
    assert record["workerSlots"] == 2 and record["inputReport"]["neverJoined"] == 2
    assert device.runs.join(ops.RUN_JOIN.request(run_id=run, token=TOKEN), SECOND)["worker"] == "worker-1"
    device2, _ = make_device()
    opened = device2.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job", workers=1), CLIENT,
                               token_digest(TOKEN))["runId"]
    with pytest.raises(errors.InvalidArgument):
        device2.runs.program(ops.RUN_PROGRAM.request(run_id=opened, program=program(), workers=2), CLIENT,
                             token_digest("other"))
    assert device2.runs.show(opened)["fabric"] == "UNPROGRAMMED", "the refused program changed nothing"
