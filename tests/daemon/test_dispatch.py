"""The dispatcher's change path, in one process: a real store, a real model, a commit that fails.

tests/daemon/test_unsaved_change.py makes the disk full under a real csd; here the store's
SQLite connection refuses its COMMITs (as SQLite does on a full disk), so every part of the model
can be compared with what it was, not only what a client sees: the device, every run and what is
unsaved, the events and their seqs, the replies remembered, the audit trail and what was published.
"""

from __future__ import annotations

import json
import sqlite3
from types import SimpleNamespace

import pytest

from csadmin.shared import protocol
from csadmin.daemon.serve.context import Caller, Context
from csadmin.daemon.serve.dispatch import Dispatcher
from csadmin.daemon.store.store import Store
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
from csadmin.shared import ops
from tests.daemon.recording import Log
from tests.statemachine.fakeclock import FakeClock

ADMIN = Caller("admin", "admin", "session-of-admin")
RUNTIME = Caller("runtime", "operator", "session-of-runtime")
PROGRAM = {"fingerprint": "f", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
           "compile_time": 1.0, "est_samples_per_sec": 10.0, "size_bytes": 0}


class FullDisk:
    """The store's SQLite connection, whose COMMIT fails while `full`, as on a full disk (SQLite
    has then rolled the transaction back itself)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        self.full = False

    def execute(self, sql, *args):
        if sql == "COMMIT" and self.full:
            self.db.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")
        return self.db.execute(sql, *args)

    def __getattr__(self, name):
        return getattr(self.db, name)


class Healthy:
    healthy, failure = True, ""


@pytest.fixture
def rig(tmp_path):
    clock = FakeClock()
    device = Device(clock, Timings(activate_ms=1_000, standby_ms=1_000))
    device.recover(None, [], [])
    store = Store(str(tmp_path / "state"), keep_events=1_000)
    disk = store.db = FullDisk(store.db)
    published, log = [], Log()
    dispatcher = Dispatcher(Context(device, "ipc://events", clock.now, "test"), store, published.append, log, Healthy())
    ids = iter(range(1, 1_000))

    def ask(caller, op, request_id=None, **args) -> dict:
        request_id = next(ids) if request_id is None else request_id
        frame = protocol.request(request_id, op, args)
        reply = dispatcher.submit(caller.session.encode(), frame, caller)
        if reply is None:  # a durable change: answered once the loop commits its group, as csd's loop does
            dispatcher.commit_group()
            (_, reply), = dispatcher.take_ready()
        return json.loads(reply)

    def submit(caller, op, request_id=None, **args):
        """Hand a request to the group as the loop does; its reply, or None while it waits."""
        request_id = next(ids) if request_id is None else request_id
        return dispatcher.submit(caller.session.encode(), protocol.request(request_id, op, args), caller)

    def replies() -> list[dict]:
        return [json.loads(reply) for _, reply in dispatcher.take_ready()]

    yield SimpleNamespace(clock=clock, device=device, store=store, disk=disk, published=published, log=log,
                          ask=ask, dispatcher=dispatcher, submit=submit, replies=replies)
    store.close()


def everything(device: Device, store: Store) -> tuple:
    stored = store.db.execute("SELECT (SELECT COUNT(*) FROM events), (SELECT COUNT(*) FROM runs), "
                              "(SELECT COUNT(*) FROM replies), (SELECT snapshot FROM device)").fetchone()
    return (device.snapshot(), device.runs.listing(), device.events.query(), device.events.last_seq,
            device.run_book.unsaved(), device.next_deadline(), stored)


@pytest.mark.parametrize("op, args, caller", [
    ("system.standby", {"force": True}, ADMIN),  # aborts the open run, then starts a transition
    ("run.close", {"run_id": "run-000001"}, RUNTIME),
    ("runs.abort", {"run_id": "run-000001"}, ADMIN),
    ("run.open", {"mode": "train"}, RUNTIME),  # refused (BUSY): the refusal itself is not a commit
    ("slurm.job.end", {"job_id": "42"}, ADMIN),
])
def test_a_change_that_cannot_be_saved_is_undone_whole_and_a_retry_succeeds(rig, op, args, caller):
    device, store, disk, published, ask = rig.device, rig.store, rig.disk, rig.published, rig.ask
    assert ask(ADMIN, "slurm.job.begin", job_id="42", user="alice")["ok"]
    run = ask(RUNTIME, "run.open", mode="train")["result"]["runId"]
    assert ask(RUNTIME, "run.program", run_id=run, program=PROGRAM)["ok"]
    assert ask(RUNTIME, "run.stream", run_id=run, samples=5)["ok"]  # a hot op: the run is left unsaved
    assert device.run_book.unsaved()
    published.clear()
    before = everything(device, store)

    disk.full = True
    reply = ask(caller, op, request_id="retried", **args)
    if op == "run.open":  # refused before any commit: nothing to save
        assert reply["error"]["code"] == "BUSY"
        return
    assert reply["ok"] is False and reply["error"]["code"] == "INTERNAL"
    assert reply["error"]["message"] == "The change could not be saved, so it was not made."
    assert everything(device, store) == before  # the model and the store
    assert published == []
    assert ("exception", "persist_failed") in [line[:2] for line in rig.log.lines]

    disk.full = False
    retried = ask(caller, op, request_id="retried", **args)
    assert retried["ok"] is True, retried
    assert [e["seq"] for e in published] == list(range(before[3] + 1, device.events.last_seq + 1))
    assert device.run_book.unsaved() == []  # the stream's counters went with the retry's commit
    assert ask(caller, op, request_id="retried", **args) == retried  # and now it is remembered


def test_a_timed_completion_that_cannot_be_saved_is_kept_and_written_with_the_next_commit(rig):
    """The timer's completion is not undone (it would fire again on every loop turn while the
    disk is full): the model keeps it, and the next commit writes the device as it is."""
    assert rig.ask(ADMIN, "system.standby")["ok"]
    rig.clock.tick(1_000)
    rig.disk.full = True
    rig.published.clear()
    rig.dispatcher.tick()
    assert rig.device.lifecycle.value == "STANDBY"
    assert ("exception", "persist_failed") in [line[:2] for line in rig.log.lines]
    # Kept, so its events go out now, as the model's state (they are written with the next commit).
    assert [e["type"] for e in rig.published] == ["EventEnteredStandby", "EventStandbyCompleted"]
    rig.disk.full = False
    assert rig.ask(ADMIN, "config.execmode.setup", mode="WEIGHT_STREAMING")["ok"]
    assert json.loads(rig.store.db.execute("SELECT snapshot FROM device").fetchone()[0])["state"] == "STANDBY"
    stored = [row[0] for row in rig.store.db.execute("SELECT seq FROM events ORDER BY seq")]
    assert stored == list(range(1, rig.device.events.last_seq + 1))  # the timer's events too, no gap


# -- group commit ---------------------------------------------------------------------------------

class CountingDisk(FullDisk):
    """Counts the store's COMMITs (one per fsync'd transaction)."""

    commits = 0

    def execute(self, sql, *args):
        if sql == "COMMIT" and not self.full:
            self.commits += 1
        return super().execute(sql, *args)


def _stored_audit(store) -> list[tuple]:
    return store.db.execute("SELECT op, outcome FROM audit ORDER BY n").fetchall()


def test_a_group_is_committed_once_and_each_request_keeps_its_reply_audit_record_and_events(rig):
    disk = rig.store.db = CountingDisk(rig.disk.db)
    assert rig.ask(ADMIN, "system.standby")["ok"]
    rig.clock.tick(1_000)
    rig.dispatcher.tick()
    rig.published.clear()
    first_seq = rig.device.events.last_seq + 1
    commits = disk.commits
    modes = ["WEIGHT_STREAMING", "PIPELINED", "WEIGHT_STREAMING"]
    for n, mode in enumerate(modes):
        assert rig.submit(ADMIN, "config.execmode.setup", request_id=f"m{n}", mode=mode) is None  # waits
    assert rig.submit(ADMIN, "runs.abort", request_id="refused", run_id="run-000009") is None  # NOT_FOUND
    assert rig.published == [] and rig.replies() == []  # nothing leaves before the commit
    rig.dispatcher.commit_group()
    assert disk.commits == commits + 1  # one transaction (one fsync) for the whole group
    answered = rig.replies()
    assert [r["id"] for r in answered] == ["m0", "m1", "m2", "refused"]  # in arrival order
    assert all(r["ok"] for r in answered[:3]) and answered[3]["error"]["code"] == "NOT_FOUND"
    assert rig.device.snapshot()["configuredExecmode"] == "WEIGHT_STREAMING"
    # Each change's own events, in order, with consecutive seqs, published only now.
    assert [e["seq"] for e in rig.published] == list(range(first_seq, rig.device.events.last_seq + 1))
    stored = [row[0] for row in rig.store.db.execute("SELECT seq FROM events WHERE seq >= ?", (first_seq,))]
    assert stored == [e["seq"] for e in rig.published]
    # Each its own audit record and stored reply; a retry of each gets its first reply.
    assert [op for op, outcome in _stored_audit(rig.store) if outcome == "ok"][-3:] == ["config.execmode.setup"] * 3
    assert rig.store.db.execute("SELECT COUNT(*) FROM replies WHERE request_id IN ('\"m0\"', '\"m1\"', "
                                "'\"m2\"')").fetchone()[0] == 3
    for n, mode in enumerate(modes):
        assert rig.ask(ADMIN, "config.execmode.setup", request_id=f"m{n}", mode=mode) == answered[n]


def test_a_request_refused_inside_a_group_undoes_only_itself(rig):
    run = None
    assert rig.submit(ADMIN, "slurm.job.begin", job_id="42", user="alice") is None
    assert rig.submit(RUNTIME, "run.close", run_id="run-000009") is None  # NOT_FOUND: refused alone
    assert rig.submit(RUNTIME, "run.open", mode="train") is None
    rig.dispatcher.commit_group()
    began, refused, opened = rig.replies()
    assert began["ok"] and not refused["ok"] and refused["error"]["code"] == "NOT_FOUND" and opened["ok"]
    run = opened["result"]["runId"]
    assert rig.device.runs.show(run)["slurmJob"] == "42"
    assert ("run.close", "NOT_FOUND") in [(row[3], row[5]) for row in rig.dispatcher.audit.take()]


def test_a_group_whose_commit_fails_is_undone_whole_and_its_retries_succeed(rig):
    device, store, disk, published = rig.device, rig.store, rig.disk, rig.published
    assert rig.ask(ADMIN, "slurm.job.begin", job_id="42", user="alice")["ok"]
    run = rig.ask(RUNTIME, "run.open", mode="train")["result"]["runId"]
    assert rig.ask(RUNTIME, "run.program", run_id=run, program=PROGRAM)["ok"]
    assert rig.ask(RUNTIME, "run.stream", run_id=run, samples=5)["ok"]  # a hot op: the run is left unsaved
    published.clear()
    before = everything(device, store)

    group = [(RUNTIME, "run.close", "g1", {"run_id": run}),
             (ADMIN, "runs.abort", "g2", {"run_id": "run-000009"}),  # refused on its own (NOT_FOUND)
             (ADMIN, "slurm.job.end", "g3", {"job_id": "42"}),
             (ADMIN, "system.standby", "g4", {"force": True})]
    disk.full = True
    for caller, op, request_id, args in group:
        assert rig.submit(caller, op, request_id=request_id, **args) is None
    rig.dispatcher.commit_group()
    refused = rig.replies()
    assert [r["id"] for r in refused] == ["g1", "g2", "g3", "g4"]
    for r in refused:
        assert r["ok"] is False and r["error"]["code"] == "INTERNAL"
        assert r["error"]["message"] == "The change could not be saved, so it was not made."
    assert everything(device, store) == before  # the model and the store, exactly
    assert published == []
    assert ("exception", "persist_failed") in [line[:2] for line in rig.log.lines]

    disk.full = False  # room again: the same requests, retried, are made (none was remembered)
    for caller, op, request_id, args in group:
        assert rig.submit(caller, op, request_id=request_id, **args) is None
    rig.dispatcher.commit_group()
    retried = rig.replies()
    assert [r["ok"] for r in retried] == [True, False, True, True]
    assert retried[1]["error"]["code"] == "NOT_FOUND"
    assert device.lifecycle.value == "PENDING_STANDBY" and device.runs.show(run)["status"] == "CLOSED"
    assert device.runs.show(run)["totalSamples"] == 5 and device.snapshot()["slurmJob"] is None
    assert [e["seq"] for e in published] == list(range(before[3] + 1, device.events.last_seq + 1))
    assert device.run_book.unsaved() == []  # the stream's counters went with the group's commit


def test_a_read_a_hot_op_or_a_retry_commits_the_group_first(rig):
    """No reply shows a state that is not durable, and a retry never runs a change twice."""
    assert rig.submit(ADMIN, "system.standby", request_id="s") is None
    shown = rig.submit(ADMIN, "system.show")
    assert shown is not None and json.loads(shown)["result"]["state"] == "PENDING_STANDBY"
    assert [r["id"] for r in rig.replies()] == ["s"]  # committed (and queued) before the read's reply
    assert json.loads(rig.store.db.execute("SELECT snapshot FROM device").fetchone()[0])["state"] == "PENDING_STANDBY"

    assert rig.submit(ADMIN, "slurm.job.begin", request_id="j", job_id="42", user="alice") is None
    retry = rig.submit(ADMIN, "slurm.job.begin", request_id="j", job_id="42", user="alice")
    first = rig.replies()
    assert [r["id"] for r in first] == ["j"] and first[0]["ok"]
    assert json.loads(retry) == first[0]  # the first reply, once it was durable
    assert [e["type"] for e in rig.published].count("EventSlurmJobStarted") <= 1


def test_a_group_of_refusals_only_commits_nothing_and_leaves_unsaved_runs_unsaved(rig):
    assert rig.ask(ADMIN, "slurm.job.begin", job_id="42", user="alice")["ok"]
    run = rig.ask(RUNTIME, "run.open", mode="train")["result"]["runId"]
    assert rig.ask(RUNTIME, "run.program", run_id=run, program=PROGRAM)["ok"]
    assert rig.ask(RUNTIME, "run.stream", run_id=run, samples=5)["ok"]
    disk = rig.store.db = CountingDisk(rig.disk.db)
    assert rig.submit(ADMIN, "runs.abort", run_id="run-000009") is None
    rig.dispatcher.commit_group()
    (refused,) = rig.replies()
    assert refused["error"]["code"] == "NOT_FOUND" and disk.commits == 0
    assert [r["runId"] for r in rig.device.run_book.unsaved()] == [run]  # still to be written by the flush


def test_a_hot_op_that_emits_an_event_goes_the_same_way_as_a_request_when_it_cannot_be_saved(rig):
    """run.stream just past the programming deadline (before the timer fired) finishes the
    programming: an event, so the stream is committed at once, through the same stage, commit and
    publish as any change; unsaved, it is undone whole and refused, and its retry succeeds."""
    assert rig.ask(ADMIN, "slurm.job.begin", job_id="42", user="alice")["ok"]
    run = rig.ask(RUNTIME, "run.open", mode="train")["result"]["runId"]
    program = {**PROGRAM, "size_bytes": 2_000_000_000}  # a second of programming
    programmed = rig.ask(RUNTIME, "run.program", run_id=run, program=program)["result"]
    assert programmed["fabric"] == "PROGRAMMING"
    rig.clock.tick(programmed["programmingUntil"] - rig.device.now())
    rig.published.clear()
    before = everything(rig.device, rig.store)

    rig.disk.full = True
    reply = rig.ask(RUNTIME, "run.stream", request_id="s", run_id=run, samples=5)
    assert reply["error"]["code"] == "INTERNAL" and "could not be saved" in reply["error"]["message"]
    assert everything(rig.device, rig.store) == before and rig.published == []

    rig.disk.full = False
    retried = rig.ask(RUNTIME, "run.stream", request_id="s", run_id=run, samples=5)
    assert retried["ok"] is True and retried["result"]["fabric"] == "PROGRAMMED"
    assert [e["type"] for e in rig.published] == ["EventProgrammingFinished"]
    assert rig.device.run_book.unsaved() == []  # written with its event
    assert rig.ask(RUNTIME, "run.stream", request_id="s", run_id=run, samples=5) == retried  # remembered
