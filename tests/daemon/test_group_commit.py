"""Group commit against a real csd (daemon/serve/group.py): many clients changing the system at once,
csd killed with SIGKILL while they do. Every change a client was told about is on disk after the
restart: retried with the same id, each gets exactly the reply it had (replayed, not made again),
and each has its own audit record.

The one-transaction-per-group mechanics (one COMMIT, replies after it, a failed commit undoing the
whole group) are checked in-process in tests/daemon/test_dispatch.py, with a store whose COMMIT
fails; tests/daemon/test_unsaved_change.py fills a real csd's disk.
"""

from __future__ import annotations

import json
import os
import threading
import time

import zmq

from csadmin.shared import protocol
from tests.harness import wait_until

CLIENTS = 8
MODES = ("WEIGHT_STREAMING", "PIPELINED")


def _dealer(ctx, csd, identity: bytes):
    sock = csd.secure(ctx.socket(zmq.DEALER))
    sock.setsockopt(zmq.IDENTITY, identity)  # the retry key: the same socket identity after the restart
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(csd.endpoint)
    return sock


def _mutate(ctx, csd, n: int, stop: threading.Event, acknowledged: list) -> None:
    """Toggle the execution mode until csd stops answering; keep every (frame, reply) answered ok."""
    sock = _dealer(ctx, csd, f"mutator-{n}".encode())
    try:
        for i in range(100_000):
            frame = protocol.request(f"{n}-{i}", "config.execmode.setup", {"mode": MODES[(n + i) % 2]})
            sock.send(frame)
            if not sock.poll(3_000, zmq.POLLIN):  # csd was killed: this one was never acknowledged
                return
            reply = sock.recv()
            assert json.loads(reply)["ok"], reply
            acknowledged.append((frame, reply))
            if stop.is_set():
                return
    finally:
        sock.close()


def test_concurrent_changes_acknowledged_before_a_kill9_are_all_on_disk_exactly_once(make_csd):
    csd = make_csd(log_level="warning").start()
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=20)
    ctx = zmq.Context()
    stop = threading.Event()
    acknowledged = [[] for _ in range(CLIENTS)]
    threads = [threading.Thread(target=_mutate, args=(ctx, csd, n, stop, acknowledged[n]), daemon=True)
               for n in range(CLIENTS)]
    try:
        for t in threads:
            t.start()
        # Kill it mid-stream, once every client has had some changes acknowledged.
        wait_until(lambda: all(len(a) >= 20 for a in acknowledged), 60, what="every client to get 20 changes done")
        time.sleep(0.05)
        csd.kill9()
        stop.set()
        for t in threads:
            t.join(30)
        total = sum(map(len, acknowledged))
        csd.start()

        for n, answered in enumerate(acknowledged):
            sock = _dealer(ctx, csd, f"mutator-{n}".encode())
            try:
                for frame, reply in answered:
                    sock.send(frame)
                    assert sock.poll(10_000, zmq.POLLIN), "no answer to a retry"
                    assert sock.recv() == reply, "an acknowledged change's reply was lost (or it ran again)"
            finally:
                sock.close()
        with csd.client() as c:
            audited = c.call("audit.show", max_count=total + 1_000)["entries"]
        made = sum(1 for e in audited if e["op"] == "config.execmode.setup" and e["outcome"] == "ok")
        # Each its own audit record; the retries were only replayed, not made again (at most one
        # change per client was in flight, committed but unanswered, when csd was killed).
        assert total <= made <= total + CLIENTS
    finally:
        stop.set()
        ctx.destroy(linger=0)


def test_concurrent_changes_whose_commit_fails_on_a_full_disk_are_all_refused_and_then_retried(make_csd):
    """Several admins' changes arriving together (one group, as a rule) on a disk that is full:
    each is answered INTERNAL "not saved", the model and the event log are exactly as before,
    and each, retried once there is room, is made exactly once."""
    csd = make_csd(log_level="warning", file_size_limited=True).start()
    ctx = zmq.Context()
    socks = [_dealer(ctx, csd, f"admin-{n}".encode()) for n in range(CLIENTS)]
    requests = [protocol.request(f"full-{n}", "slurm.job.begin" if n == 0 else "config.execmode.setup",
                                 {"job_id": "42", "user": "alice"} if n == 0 else {"mode": MODES[n % 2]})
                for n in range(CLIENTS)]

    def all_at_once() -> list[dict]:
        for sock, frame in zip(socks, requests):
            sock.send(frame)
        replies = []
        for sock in socks:
            assert sock.poll(10_000, zmq.POLLIN), "no answer"
            replies.append(json.loads(sock.recv()))
        return replies

    def state(c) -> dict:
        return {"system": {k: v for k, v in c.system_show().items() if k != "time"},
                "events": c.call("events.show")["events"]}

    try:
        with csd.client() as c:
            c.system_standby()
            c.wait_for(state="STANDBY", timeout=20)
            before = state(c)
            wal = os.path.join(csd.state_dir, "csd.sqlite3-wal")
            csd.limit_file_size(os.path.getsize(wal))
            refused = all_at_once()
            for reply in refused:
                assert reply["ok"] is False and reply["error"]["code"] == "INTERNAL", reply
                assert "could not be saved, so it was not made" in reply["error"]["message"]
            assert state(c) == before  # nothing of any of them: state, events, seqs

            csd.limit_file_size(None)  # room again
            retried = all_at_once()
            assert all(reply["ok"] for reply in retried), retried
            assert state(c)["system"]["slurmJob"]["jobId"] == "42"
            assert all_at_once() == retried  # answered from the reply cache: made once
            audited = c.audit_show(max_count=100)
        made = [e["op"] for e in audited if e["outcome"] == "ok" and e["op"] in ("slurm.job.begin", "config.execmode.setup")]
        assert sorted(made) == sorted(["slurm.job.begin"] + ["config.execmode.setup"] * (CLIENTS - 1))
    finally:
        for sock in socks:
            sock.close(0)
        ctx.term()
