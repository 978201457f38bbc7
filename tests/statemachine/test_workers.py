"""Input workers in the model (statemachine/workers.py, runs.py): on a fake clock, each sample
counted once in the run's total and in its feeder's, undone with a change, the lease kept the
opener's, silent workers reported, the breakdown and report pure functions of the run."""

from __future__ import annotations

import pytest

from csadmin import errors
from csadmin.shared.programs import RunMode
from csadmin.statemachine.run import Run
from csadmin.statemachine.workers import token_digest, token_matches
from tests.statemachine.test_runs_table import CLIENT, LEASE_MS, in_phase, OPEN_PROGRAMMED, TOKEN, WORKER

SECOND = "second-worker/fedcba9876543210"


def sums(record: dict) -> None:
    assert sum(w["samples"] for w in record["workers"]) == record["totalSamples"]


def test_each_sample_is_counted_once_in_the_total_and_its_feeders_row():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    device.join_run(run, SECOND, TOKEN, "fast")
    clock.tick(1_000)
    device.stream(run, WORKER, 30)
    device.stream(run, SECOND, 60)
    device.stream(run, CLIENT, 10)
    record = device.show_run(run)
    sums(record)
    rows = {w["name"]: w for w in record["workers"]}
    assert {n: r["samples"] for n, r in rows.items()} == {"job-42": 10, "worker-1": 30, "fast": 60}
    assert rows["fast"]["share"] == 0.6 and rows["fast"]["samplesPerSec"] == 60.0
    # fair share is 1/3: below half of it (< 16.7 of 100 samples) is slow
    assert record["inputReport"]["slow"] == ["job-42"]
    closed = device.close_run(run, CLIENT)
    sums(closed)
    assert closed["performance"]["total_samples"] == 100


def test_a_refused_or_undone_stream_counts_nothing():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    device.stream(run, WORKER, 5)
    with pytest.raises(RuntimeError), device.change():
        device.stream(run, WORKER, 100)
        raise RuntimeError("the commit failed")
    record = device.show_run(run)
    assert record["totalSamples"] == 5 and [w["samples"] for w in record["workers"]] == [5]
    with pytest.raises(errors.PermissionDenied):
        device.stream(run, "stranger/0000000000000000", 7)
    sums(device.show_run(run))


def test_the_lease_is_the_openers_and_a_silent_worker_is_lost():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    lease_until = device.show_run(run)["leaseUntil"]
    clock.tick(LEASE_MS // 2)
    device.stream(run, WORKER, 1)
    assert device.show_run(run)["leaseUntil"] == lease_until, "a worker does not keep the run alive"
    for step in (LEASE_MS // 2, LEASE_MS // 2 + 1):  # the opener beats within its lease; the worker is silent
        device.heartbeat(run, CLIENT)
        clock.tick(step)
        assert not device.advance()
    record = device.show_run(run)
    assert record["status"] == "OPEN"
    assert [(w["name"], w["status"]) for w in record["workers"]] == [("worker-1", "LOST")]
    assert record["inputReport"]["lost"] == ["worker-1"] and "1 worker slot never joined" in record["inputReport"]["message"]
    device.heartbeat(run, WORKER)  # it comes back
    assert device.show_run(run)["workers"][0]["status"] == "ACTIVE"


def test_joining_is_checked_and_idempotent():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    again = device.join_run(run, WORKER, TOKEN)
    assert again["changed"] is False and again["worker"] == "worker-1"
    with pytest.raises(errors.InvalidArgument):
        device.join_run(run, SECOND, TOKEN, "worker-1")  # another feeder's name
    with pytest.raises(errors.PermissionDenied):
        device.join_run(run, SECOND, "wrong")
    device.join_run(run, SECOND, TOKEN)
    with pytest.raises(errors.Busy):
        device.join_run(run, "third/0000000000000000", TOKEN)
    no_workers = device.open_run  # a run opened without slots admits nobody, whatever the token
    device.close_run(run, CLIENT)
    other = no_workers("job", CLIENT, RunMode.TRAIN)["runId"]
    with pytest.raises(errors.PermissionDenied):
        device.join_run(other, SECOND, TOKEN)


def test_workers_and_the_digest_survive_the_store_form_but_not_the_wire():
    device, clock, run = in_phase(OPEN_PROGRAMMED)
    device.stream(run, WORKER, 3)
    (stored,) = [r for r in device.unsaved_runs() if r["runId"] == run]
    assert token_matches(TOKEN, stored["joinTokenDigest"]) and stored["joinTokenDigest"] == token_digest(TOKEN)
    assert "joinTokenDigest" not in device.show_run(run)
    back = Run.from_dict(stored)
    assert back.workers[WORKER].samples == 3 and back.token_digest == token_digest(TOKEN)
    assert not token_matches(TOKEN, None)


def test_slots_may_be_asked_for_at_program_time_once():
    from tests.statemachine.test_runs_table import make_device, program

    device, clock = make_device()
    run = device.open_run("job", CLIENT, RunMode.TRAIN)["runId"]
    with pytest.raises(errors.PermissionDenied):
        device.join_run(run, SECOND, TOKEN)  # no slots yet
    record = device.program_run(run, CLIENT, program(), worker_slots=2, token_digest=token_digest(TOKEN))
    assert record["workerSlots"] == 2 and record["inputReport"]["neverJoined"] == 2
    assert device.join_run(run, SECOND, TOKEN)["worker"] == "worker-1"
    device2, _ = make_device()
    opened = device2.open_run("job", CLIENT, RunMode.TRAIN, worker_slots=1, token_digest=token_digest(TOKEN))["runId"]
    with pytest.raises(errors.InvalidArgument):
        device2.program_run(opened, CLIENT, program(), worker_slots=2, token_digest=token_digest("other"))
    assert device2.show_run(opened)["fabric"] == "UNPROGRAMMED", "the refused program changed nothing"
