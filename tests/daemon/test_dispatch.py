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

from csadmin import protocol
from csadmin.daemon.context import Caller, Context
from csadmin.daemon.dispatch import Dispatcher
from csadmin.daemon.store import Store
from csadmin.statemachine.defaults import Timings
from csadmin.statemachine.device import Device
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
        return json.loads(dispatcher.handle(caller.session.encode(), frame, caller))

    yield SimpleNamespace(clock=clock, device=device, store=store, disk=disk, published=published, log=log,
                          ask=ask, dispatcher=dispatcher)
    store.close()


def everything(device: Device, store: Store) -> tuple:
    stored = store.db.execute("SELECT (SELECT COUNT(*) FROM events), (SELECT COUNT(*) FROM runs), "
                              "(SELECT COUNT(*) FROM replies), (SELECT snapshot FROM device)").fetchone()
    return (device.snapshot(), device.list_runs(), device.events.query(), device.events.last_seq,
            device.unsaved_runs(), device.next_deadline(), stored)


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
    assert device.unsaved_runs()
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
    assert device.unsaved_runs() == []  # the stream's counters went with the retry's commit
    assert ask(caller, op, request_id="retried", **args) == retried  # and now it is remembered


def test_a_timed_completion_that_cannot_be_saved_is_kept_and_written_with_the_next_commit(rig):
    """The timer's completion is not undone (it would fire again on every loop turn while the
    disk is full): the model keeps it, and the next commit writes the device as it is."""
    assert rig.ask(ADMIN, "system.standby")["ok"]
    rig.clock.tick(1_000)
    rig.disk.full = True
    rig.dispatcher.tick()
    assert rig.device.lifecycle.value == "STANDBY"
    assert ("exception", "persist_failed") in [line[:2] for line in rig.log.lines]
    rig.disk.full = False
    assert rig.ask(ADMIN, "config.execmode.setup", mode="WEIGHT_STREAMING")["ok"]
    assert json.loads(rig.store.db.execute("SELECT snapshot FROM device").fetchone()[0])["state"] == "STANDBY"
