"""The damage suite (issue 24): a real csd's state directory after kill -9, damaged in one way
per case, then csd started on it. Every case must either be refused (exit 1, the project's clear
message: what is damaged, restore or start over; never SQLite's own words, never a traceback),
or come up with exactly the state its clients were acknowledged: `system show`, every event
(also through the by-type index), the runs and the audit trail. A read that meets damage later
counts as refused only if csd answers it with the clear message and stops (exit 1).

Damage: truncations of the database and of its write-ahead log at random offsets, the log
deleted (with and without SQLite's index), single bit flips at random offsets of both files,
64 garbage bytes in the middle of the database, and older copies put back (a backup taken at
the last clean stop; a copy of the files taken while csd ran, before the last changes). The
cases are drawn from a fixed seed, every kind in turn. CI runs FUZZ_DAMAGE cases (default 16);
`make fuzz` runs 400.
"""

from __future__ import annotations

import json
import os
import random
import shutil

import pytest

from csadmin import errors
from tests.daemon.test_runs import descriptor
from tests.harness import Daemon, wait_until

CASES = int(os.environ.get("FUZZ_DAMAGE", "16"))
RAW_SQLITE = ("DatabaseError", "OperationalError", "IntegrityError", "Traceback", "sqlite3.", "This is a bug")


class Workload:
    """One csd's history, frozen after kill -9: the files, and what its clients were told."""

    def __init__(self):
        self.csd = Daemon()
        self.csd.start()
        with self.csd.client() as c, c.open_run(mode="train", owner="job-7") as run:
            run.program(descriptor(c))
            run.stream(1234)
            run.close()
        self._changes(30)  # enough rows that the database holds pages the log does not supersede
        self.csd.restart()  # a clean stop: everything checkpointed into the database
        self.backup = self._copy("backup", ("csd.sqlite3",))  # what an operator's nightly backup holds
        self._changes(6)
        self.hot_copy = self._copy("hot-copy", ("csd.sqlite3", "csd.sqlite3-wal", "csd.sqlite3-shm"))
        self._changes(6)
        with self.csd.client() as c:
            self.acknowledged = state(c)
        self.csd.kill9()
        self.killed = self._copy("killed", None)
        self.csd.start()  # the same state after a clean stop: the log checkpointed and removed
        with self.csd.client() as c:
            assert state(c) == self.acknowledged
        self.csd.stop()
        self.stopped = self._copy("stopped", None)

    def _changes(self, count: int) -> None:
        with self.csd.client() as c:
            if c.system_show()["state"] != "STANDBY":
                c.system_standby()
                c.wait_for(state="STANDBY", timeout=20)
            for n in range(count):
                c.execmode_setup(("WEIGHT_STREAMING", "PIPELINED")[n % 2])
                with pytest.raises(errors.NotFound):  # a refused change: audited too
                    c.runs_abort("run-999999")

    def _copy(self, name: str, files) -> str:
        target = os.path.join(self.csd.dir, name)
        if files is None:
            shutil.copytree(self.csd.state_dir, target)
            return target
        os.makedirs(target)
        for file in files:
            source = os.path.join(self.csd.state_dir, file)
            if os.path.exists(source):
                shutil.copy2(source, target)
        return target

    def reset(self, base: str) -> None:
        shutil.rmtree(self.csd.state_dir)
        shutil.copytree(base, self.csd.state_dir)

    def path(self, name: str) -> str:
        return os.path.join(self.csd.state_dir, name)


def state(c) -> dict:
    """What clients see: the system (without the clock), every event, the by-type index, runs, audit."""
    system = {k: v for k, v in c.system_show().items() if k not in ("time", "uptime")}
    events = c.events_show()
    return {"system": system, "events": events,
            "by type": c.events_show(event_type="EventSetExecModePipelined"),
            "runs": c.runs_list(), "audit": c.audit_show(max_count=10_000)}


@pytest.fixture(scope="module")
def workload():
    w = Workload()
    yield w
    w.csd.cleanup()


def _flip(path: str, rng: random.Random, count: int = 1, garbage: bool = False) -> str:
    size = os.path.getsize(path)
    if size == 0:
        return "empty file"
    with open(path, "r+b") as f:
        if garbage:  # a run of bytes in the middle
            at = rng.randrange(size // 4, max(size // 4 + 1, 3 * size // 4))
            f.seek(at)
            f.write(rng.randbytes(min(count, size - at)))
            return f"{count} garbage bytes at {at}"
        at = rng.randrange(size)
        f.seek(at)
        byte = f.read(1)[0] ^ (1 << rng.randrange(8))
        f.seek(at)
        f.write(bytes([byte]))
        return f"bit flipped at {at} of {size}"


def _put_back(w: Workload, copy: str, keep_index: bool) -> str:
    for name in ("csd.sqlite3", "csd.sqlite3-wal", "csd.sqlite3-shm"):
        if name == "csd.sqlite3-shm" and keep_index:
            continue
        if os.path.exists(w.path(name)):
            os.unlink(w.path(name))
        if os.path.exists(os.path.join(copy, name)):
            shutil.copy2(os.path.join(copy, name), w.path(name))
    return f"{os.path.basename(copy)} put back" + (", SQLite's index kept" if keep_index else "")


def damage(w: Workload, kind: str, rng: random.Random) -> str:
    db, wal = w.path("csd.sqlite3"), w.path("csd.sqlite3-wal")
    if kind == "truncate db":
        at = rng.randrange(os.path.getsize(db))
        os.truncate(db, at)
        return f"database cut at {at}"
    if kind == "truncate wal":
        at = rng.randrange(os.path.getsize(wal))
        os.truncate(wal, at)
        return f"log cut at {at}"
    if kind == "delete wal":
        os.unlink(wal)
        if rng.random() < 0.5:
            os.unlink(w.path("csd.sqlite3-shm"))
            return "log and index deleted"
        return "log deleted"
    if kind == "flip db":
        return "database: " + _flip(db, rng)
    if kind == "flip wal":
        return "log: " + _flip(wal, rng)
    if kind == "garbage db":
        return "database: " + _flip(db, rng, 64, garbage=True)
    if kind == "older copy":
        copy = rng.choice([w.backup, w.hot_copy])
        # The backup alone (the crashed csd's log and index stay, as if only the database were put
        # back); the copy taken while csd ran with its own log, and with or without its index.
        return _put_back(w, copy, keep_index=copy == w.backup or rng.random() < 0.5)
    raise AssertionError(kind)


KINDS = ["truncate db", "truncate wal", "delete wal", "flip db", "flip wal", "garbage db", "older copy"]


def _outcome(w: Workload) -> tuple[str, str]:
    """("refused", reason) or ("up", "") once csd has exited or answers."""
    csd = w.csd
    csd.spawn()

    def settled():
        if csd.proc.poll() is not None:
            return "exited"
        try:
            with csd.client(timeout=0.5, retries=0) as c:
                return c.hello() and "up"
        except errors.Unreachable:
            return None

    if wait_until(settled, 30, what="csd to start or refuse") == "up":
        return "up", ""
    return "exited", _reason(csd, "cannot_start")


def _reason(csd, event: str) -> str:
    log = csd.log()
    assert "Traceback" not in log, log
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    found = [line for line in lines if line["event"] == event]
    assert found, f"no {event} in the log:\n{log}"
    return found[-1]["reason"]


def _clear(reason: str) -> None:
    assert reason.startswith("The state store"), reason
    assert "backup" in reason and "start over" in reason, reason
    assert not any(word in reason for word in RAW_SQLITE), reason


def test_every_damage_is_refused_or_comes_up_with_exactly_the_acknowledged_state(workload):
    rng = random.Random(24)
    tally: dict[str, dict[str, int]] = {}
    for case in range(CASES):
        kind = KINDS[case % len(KINDS)]
        # The log's damage after kill -9; the database's also after a clean stop (no log over it).
        stopped = "wal" not in kind and (case // len(KINDS)) % 2 == 1
        workload.reset(workload.stopped if stopped else workload.killed)
        open(workload.csd.log_path, "w").close()
        what = ("after a clean stop, " if stopped else "after kill -9, ") + damage(workload, kind, rng)
        outcome, reason = _outcome(workload)
        try:
            if outcome == "exited":
                assert workload.csd.proc.returncode == 1, what
                _clear(reason)
            else:
                try:
                    with workload.csd.client(retries=0) as c:
                        seen = state(c)
                    assert seen == workload.acknowledged, f"case {case} ({what}) came up with another state"
                except errors.Internal as exc:  # damage met by a read: answered clearly, and csd stops
                    assert "state store is damaged" in exc.message and "This is a bug" not in exc.hint, exc
                    assert workload.csd.proc.wait(timeout=20) == 1, what
                    _clear(_reason(workload.csd, "store_damaged"))
                    outcome = "stopped"
        except AssertionError as exc:
            raise AssertionError(f"case {case}: {what}: {exc}") from None
        finally:
            if workload.csd.proc.poll() is None:
                workload.csd.kill9()
        if os.environ.get("FUZZ_DAMAGE_VERBOSE"):
            print(f"case {case}: {what}: {outcome} {reason[:100]}")
        tally.setdefault(kind, {}).setdefault(outcome, 0)
        tally[kind][outcome] += 1
    assert set(tally) == set(KINDS) or CASES < len(KINDS)
    print(f"\ndamage: {CASES} cases ({len(workload.acknowledged['events'])} events, "
          f"{len(workload.acknowledged['audit'])} audit records acknowledged): {tally}")
