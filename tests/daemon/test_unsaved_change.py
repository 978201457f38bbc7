"""A change csd cannot save is not made (daemon/serve/dispatch.py, statemachine/change.py).

On a real csd whose disk is full: its file size limit (RLIMIT_FSIZE) is pinned to the size its
write-ahead log has, so the next commit's write fails in the kernel (EFBIG, with SIGXFSZ ignored)
as it would on a full disk. The request is answered INTERNAL saying the change was not made, the
model is exactly as before (state, events and their seqs, runs), nothing is published, and the
same request retried once there is room succeeds, exactly once, and survives a restart.
"""

from __future__ import annotations

import json
import os

import pytest
import zmq

from csadmin.shared import protocol
from tests.harness import wait_until


@pytest.fixture
def full_disk_csd(make_csd):
    # Warnings only: the log is a file too, and must stay below the limit to say what happened.
    return make_csd(log_level="warning", file_size_limited=True).start()


def _state(c) -> dict:
    """Everything a client can see of the model, but the clock."""
    shown = {k: v for k, v in c.system_show().items() if k != "time"}
    return {"system": shown, "events": c.call("events.show")["events"], "runs": c.runs_list()}


def test_a_change_that_cannot_be_saved_is_not_made_nothing_is_published_and_a_retry_succeeds(full_disk_csd):
    csd = full_disk_csd
    ctx = zmq.Context()
    dealer = csd.secure(ctx.socket(zmq.DEALER))
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(csd.endpoint)

    def send(request_id, op, **args) -> dict:
        dealer.send(protocol.request(request_id, op, args))
        assert dealer.poll(10_000, zmq.POLLIN), f"no answer to {op}"
        return json.loads(dealer.recv())

    try:
        with csd.client() as c:
            c.system_standby()
            c.wait_for(state="STANDBY", timeout=10)
            sub = c.subscribe()
            # Until an event arrives the subscription may not hold yet (ZeroMQ's slow joiner).
            modes = iter(["WEIGHT_STREAMING", "PIPELINED"] * 100)
            wait_until(lambda: c.execmode_setup(next(modes)) and sub.poll(100, zmq.POLLIN), 20,
                       what="the event subscription to carry events")
            while sub.poll(200, zmq.POLLIN):  # drain: from here on, every event is accounted for
                sub.recv_multipart()
            wanted = "PIPELINED" if c.execmode_show()["execmode"] == "WEIGHT_STREAMING" else "WEIGHT_STREAMING"
            before = _state(c)

            wal = os.path.join(csd.state_dir, "csd.sqlite3-wal")
            assert os.path.getsize(csd.log_path) < os.path.getsize(wal)
            csd.limit_file_size(os.path.getsize(wal))
            failed = send("change-1", "config.execmode.setup", mode=wanted)
            assert failed["ok"] is False and failed["error"]["code"] == "INTERNAL", failed
            assert "could not be saved, so it was not made" in failed["error"]["message"]
            assert "disk space" in failed["error"]["hint"]
            assert _state(c) == before  # the model is exactly as it was: state, events and seqs, runs

            csd.limit_file_size(None)  # room again
            retried = send("change-1", "config.execmode.setup", mode=wanted)
            assert retried["ok"] is True and retried["result"]["changed"] is True, retried
            after = _state(c)
            assert after["system"]["configuredExecmode"] == wanted
            new = after["events"][len(before["events"]):]
            assert [e["seq"] for e in new] == list(range(before["system"]["seq"] + 1, before["system"]["seq"] + 4))

            # Published: the retry's three events, and nothing of the change that was not made.
            # A last change marks the end of what there is to receive.
            c.execmode_setup(before["system"]["configuredExecmode"])
            received = []
            while not received or received[-1]["type"] != "EventConfigOpCompleted" or len(received) < 6:
                assert sub.poll(10_000, zmq.POLLIN), f"events stopped coming: {received}"
                received.append(protocol.decode_event(sub.recv_multipart()[1]))
            assert [e["seq"] for e in received] == list(range(before["system"]["seq"] + 1, before["system"]["seq"] + 7))
            assert received[:3] == new
            sub.close(0)
        assert "persist_failed" in csd.log()

        csd.restart()  # what was acknowledged is on disk; what was refused never was
        with csd.client() as c:
            restarted = _state(c)
            assert restarted["system"]["configuredExecmode"] == before["system"]["configuredExecmode"]
            assert [e["seq"] for e in restarted["events"]] == list(range(1, before["system"]["seq"] + 7))
            audited = [(e["op"], e["outcome"], json.loads(e["args"])["mode"]) for e in c.audit_show(max_count=2)]
            assert audited == [("config.execmode.setup", "ok", wanted),
                               ("config.execmode.setup", "ok", before["system"]["configuredExecmode"])]
    finally:
        dealer.close(0)
        ctx.term()
