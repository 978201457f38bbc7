"""The Slurm job the wafer is allocated to (statemachine/slurm_jobs.py, Device.begin_slurm_job and
end_slurm_job), on a fake clock: runs carry the job, the epilog's end frees the fabric the job
left held, a stale job's run gives way to the next job, and a run outside Slurm is never taken."""

from __future__ import annotations

import pytest

from csadmin.errors import Busy
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.shared.programs import RunMode
from csadmin.shared.opargs import job_id as parse_job_id
from csadmin.statemachine.slurm_jobs import SlurmJob
from csadmin.shared import ops
from tests.statemachine.fakeclock import START_MS, FakeClock

TRAIN = RunMode.TRAIN


def make_device() -> tuple[Device, FakeClock]:
    clock = FakeClock()
    return Device(clock, Timings(activate_ms=5_000, standby_ms=3_000, lease_ms=60_000)), clock


def test_runs_opened_while_a_job_holds_the_wafer_carry_its_id():
    device, clock = make_device()
    result = device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    assert result["changed"] is True and result["abortedRun"] is None
    assert device.show()["slurmJob"] == {"jobId": "42", "user": "alice", "since": START_MS}
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")
    assert run["slurmJob"] == "42" and device.runs.show(run["runId"])["slurmJob"] == "42"
    assert device.show()["runHolder"]["slurmJob"] == "42"
    started = device.events.newest(1)[0]
    assert started.type == "EventTrainingStarted" and started.details["slurmJob"] == "42"


def test_runs_outside_any_job_carry_none():
    device, _ = make_device()
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")
    assert run["slurmJob"] is None and device.show()["slurmJob"] is None
    assert "slurmJob" not in device.events.newest(1)[0].details


def test_ending_the_job_aborts_the_run_it_left_and_frees_the_fabric():
    device, clock = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")["runId"]
    clock.tick(1_000)
    result = device.end_slurm_job(ops.SLURM_JOB_END.request(job_id="42"))
    assert result == {"message": f"Slurm job 42 ended; its run {run} was aborted and the fabric is free.",
                      "changed": True, "abortedRun": run}
    record = device.runs.show(run)
    assert record["status"] == "ABORTED" and record["abortReason"] == "slurm job 42 ended"
    assert device.runs.listing()["runHolder"] is None and device.slurm_job is None
    aborted = device.events.newest(1)[0]
    assert aborted.type == "EventTrainingAborted" and aborted.details["reason"] == "slurm job 42 ended"
    # The next job gets the wafer at once.
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="43", user="bob"))
    assert device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c2")["slurmJob"] == "43"


def test_ending_a_job_whose_run_closed_forgets_it_and_leaves_closed_runs_alone():
    device, _ = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")["runId"]
    device.runs.close(ops.RUN_CLOSE.request(run_id=run), "c1")
    result = device.end_slurm_job(ops.SLURM_JOB_END.request(job_id="42"))
    assert result["changed"] is True and result["abortedRun"] is None
    assert device.runs.show(run)["status"] == "CLOSED" and device.slurm_job is None


def test_ending_is_idempotent_and_never_touches_another_jobs_run():
    device, _ = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="43", user="bob"))
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")["runId"]
    seq = device.events.last_seq
    for _ in range(2):  # an epilog of a job that never held the wafer, and a retry
        result = device.end_slurm_job(ops.SLURM_JOB_END.request(job_id="42"))
        assert result["changed"] is False and result["abortedRun"] is None
    assert device.runs.show(run)["status"] == "OPEN" and device.slurm_job.job_id == "43" and device.events.last_seq == seq


def test_beginning_the_same_job_again_changes_nothing():
    device, clock = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    clock.tick(5)
    result = device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    assert result["changed"] is False and result["slurmJob"]["since"] == START_MS


def test_a_run_left_by_an_earlier_job_gives_way_to_the_next_job():
    """The epilog of job 42 never came (slurmd crashed): Slurm gave the wafer to job 43, so 42's
    run cannot still hold it."""
    device, _ = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    stale = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")["runId"]
    result = device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="43", user="bob"))
    assert result["changed"] is True and result["abortedRun"] == stale
    assert device.runs.show(stale)["abortReason"] == "slurm job 42 ended" and device.runs.listing()["runHolder"] is None
    assert device.slurm_job == SlurmJob("43", "bob", START_MS)


def test_a_run_outside_slurm_keeps_the_fabric_and_the_job_is_told_why():
    device, _ = make_device()
    run = device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="someone-by-hand"), "c1")["runId"]
    with pytest.raises(Busy) as refused:
        device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    assert run in refused.value.message and "outside Slurm" in refused.value.message
    assert device.runs.show(run)["status"] == "OPEN" and device.slurm_job is None


def test_the_job_survives_a_snapshot_and_old_snapshots_have_none():
    device, _ = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42_7", user="alice"))
    copy, _ = make_device()
    copy.recover(device.snapshot(), [], [])
    assert copy.slurm_job == device.slurm_job
    old = {k: v for k, v in device.snapshot().items() if k != "slurmJob"}
    older, _ = make_device()
    older.recover(old, [], [])
    assert older.slurm_job is None


def test_a_run_record_keeps_its_job_across_the_store():
    device, _ = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")
    (record,) = device.run_book.unsaved()
    restored, _ = make_device()
    recovery = restored.recover(device.snapshot(), [], [record])
    assert recovery.aborted_run["slurmJob"] == "42"  # the run csd found open at start
    del record["slurmJob"]  # a record written before the Slurm integration
    older, _ = make_device()
    assert older.recover(device.snapshot(), [], [record]).aborted_run["slurmJob"] is None


def test_busy_names_the_job_holding_the_wafer():
    device, _ = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="trainer"), "c1")
    with pytest.raises(Busy) as refused:
        device.runs.open(ops.RUN_OPEN.request(mode=TRAIN, owner="other"), "c2")
    assert "slurm job 42" in refused.value.message


@pytest.mark.parametrize("good", ["42", "42_7", "42+1", " 42 "])
def test_job_ids_slurm_uses_are_accepted(good):
    assert parse_job_id(good) == good.strip()


@pytest.mark.parametrize("bad", ["", "  ", "42;rm -rf /", "4" * 65, "42 43"])
def test_anything_else_is_not_a_job_id(bad):
    with pytest.raises(ValueError):
        parse_job_id(bad)
