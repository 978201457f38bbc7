"""A change to the model as a transaction (statemachine/change.py): what csd commits, or nothing.

What csd's dispatcher relies on: a change yields the events it emitted and the runs to write; if
its block raises, the model is exactly as before (lifecycle, modes, Slurm job, runs, events and
their seqs, what is unsaved); changes nest, so a batch of requests is undone together while a
refused request undoes only itself.
"""

from __future__ import annotations

import pytest

from csadmin.errors import Busy, InvalidState
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.shared.programs import RunMode, parse_program
from csadmin.shared.states import ExecMode, Lifecycle
from csadmin.shared import ops
from tests.statemachine.fakeclock import FakeClock

CLIENT = "client-a"


class CommitFailed(Exception):
    pass


def make_device(**kwargs) -> tuple[Device, FakeClock]:
    clock = FakeClock()
    return Device(clock, Timings(activate_ms=5_000, standby_ms=3_000, lease_ms=10_000,
                                 program_bytes_per_second=1_000), **kwargs), clock


def everything(device: Device) -> tuple:
    return (device.snapshot(), device.runs.listing(), device.events.query(), device.events.last_seq,
            device.run_book.unsaved(), device.next_deadline(), device.show())


def program() -> dict:
    return parse_program({
        "fingerprint": "f", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
        "compile_time": 1.0, "est_samples_per_sec": 10.0, "size_bytes": 2_000,
    })


def test_a_change_yields_its_events_and_the_runs_to_write():
    device, _ = make_device()
    with device.change() as change:
        run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
        assert [e.type for e in change.events] == ["EventTrainingStarted"]  # readable inside, to commit
        assert [r["runId"] for r in change.dirty_runs()] == [run]
    assert [e.type for e in change.events] == ["EventTrainingStarted"]  # and after, to publish
    device.run_book.saved(change.dirty_runs())
    assert device.run_book.unsaved() == [] and not device.run_book.has_unsaved


def test_a_change_that_raises_leaves_everything_as_it_was():
    device, clock = make_device()
    device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="42", user="alice"))
    run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
    device.runs.program(ops.RUN_PROGRAM.request(run_id=run, program=program()), CLIENT)
    device.run_book.saved(device.run_book.unsaved())
    before = everything(device)
    with pytest.raises(CommitFailed), device.change() as change:
        device.system.standby(ops.SYSTEM_STANDBY.request(force=True))  # aborts the run, then starts the transition
        device.end_slurm_job(ops.SLURM_JOB_END.request(job_id="42"))
        assert change.events
        raise CommitFailed()
    assert change.events == []
    assert everything(device) == before
    assert device.lifecycle is Lifecycle.ACTIVE and device.runs.show(run)["fabric"] == "PROGRAMMING"
    clock.tick(2_000)  # the restored run carries on: its programming completes on time
    assert device.advance() and device.runs.show(run)["fabric"] == "PROGRAMMED"


def test_seqs_of_undone_events_are_used_again():
    device, _ = make_device()
    seq = device.events.last_seq
    with pytest.raises(CommitFailed), device.change():
        device.system.standby(ops.SYSTEM_STANDBY.request())
        raise CommitFailed()
    with device.change() as change:
        device.system.standby(ops.SYSTEM_STANDBY.request())
    assert [e.seq for e in change.events] == [seq + 1, seq + 2]


def test_a_refused_request_inside_a_batch_undoes_only_itself():
    device, _ = make_device()
    with device.change() as batch:
        device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
        after_first = everything(device)
        with pytest.raises(Busy), device.change():
            device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), "client-b")
        assert everything(device) == after_first
        with device.change():
            device.system.standby(ops.SYSTEM_STANDBY.request(force=True))
    assert [e.type for e in batch.events] == [
        "EventTrainingStarted", "EventTrainingAborted", "EventStandbyIssued", "EventPendingStandby",
    ]


def test_a_batch_whose_commit_fails_undoes_every_request_in_it():
    device, _ = make_device()
    before = everything(device)
    with pytest.raises(CommitFailed), device.change():
        for request in (
            lambda: device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT),
            lambda: device.system.standby(ops.SYSTEM_STANDBY.request(force=True)),
            lambda: device.system.activate(ops.SYSTEM_ACTIVATE.request()),  # refused: PENDING_STANDBY
        ):
            try:
                with device.change():
                    request()
            except InvalidState:
                pass
        raise CommitFailed()
    assert everything(device) == before
    assert device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"] == "run-000001"


def test_runs_pushed_out_of_memory_come_back():
    device = Device(FakeClock(), keep_runs=2)  # a small window, to see the oldest ended run go
    for _ in range(2):
        run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
        device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)
    device.run_book.saved(device.run_book.unsaved())
    before = everything(device)
    with pytest.raises(CommitFailed), device.change():
        device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
        assert [r["runId"] for r in device.runs.listing()["runs"]] == ["run-000003", "run-000002"]
        raise CommitFailed()
    assert everything(device) == before


def test_an_unsaved_run_stays_unsaved_and_in_memory():
    """A hot op's counters not yet written must not be lost to an undo, nor pushed out."""
    device = Device(FakeClock(), keep_runs=1)
    run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
    device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)  # ended, not yet written
    device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)
    assert {r["runId"] for r in device.run_book.unsaved()} == {"run-000001", "run-000002"}
    assert len(device.runs.listing()["runs"]) == 2  # the unsaved one is kept until it is written
    with pytest.raises(CommitFailed), device.change():
        device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id="run-000002"), CLIENT)
        raise CommitFailed()
    assert {r["runId"] for r in device.run_book.unsaved()} == {"run-000001", "run-000002"}


def test_the_device_fields_come_back_whole():
    device, clock = make_device()
    device.system.standby(ops.SYSTEM_STANDBY.request())
    clock.tick(3_000)
    device.advance()
    before = everything(device)
    with pytest.raises(CommitFailed), device.change():
        device.system.setup_execmode(ops.CONFIG_EXECMODE_SETUP.request(mode=ExecMode.WEIGHT_STREAMING))
        device.system.activate(ops.SYSTEM_ACTIVATE.request())
        device.begin_slurm_job(ops.SLURM_JOB_BEGIN.request(job_id="7", user="bob"))
        raise CommitFailed()
    assert everything(device) == before and device.lifecycle is Lifecycle.STANDBY


def test_undo_keeps_nothing_once_the_outermost_change_is_done():
    """The undo records live only while a change is open: memory does not grow with history."""
    device, _ = make_device()
    for _ in range(50):
        with device.change():
            run = device.runs.open(ops.RUN_OPEN.request(mode=RunMode.TRAIN, owner="job"), CLIENT)["runId"]
            device.runs.heartbeat(ops.RUN_HEARTBEAT.request(run_id=run), CLIENT)
            device.runs.close(ops.RUN_CLOSE.request(run_id=run), CLIENT)
    assert device.run_book._undo == [] and len(device.events) <= device.events.capacity
