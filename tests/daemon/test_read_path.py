"""The read path and the hot ops' replay memory (issue #12), in one process: cached answers are
the model's answer at every moment, a hot op's retry is counted once while csd keeps only each
client's last hot reply, and a filtered DEBUG line costs no logging work."""

from __future__ import annotations

import json
import logging

from csadmin.shared import protocol
from csadmin.shared import ops
from tests.daemon.recording import Log
from tests.daemon.test_dispatch import ADMIN, PROGRAM, RUNTIME, rig  # noqa: F401 (rig: a fixture)


def show(rig, **args) -> dict:
    reply = rig.ask(ADMIN, "system.show", **args)
    assert reply["ok"], reply
    return reply["result"]


def test_cached_show_is_the_models_answer_after_every_kind_of_change(rig):
    device, clock = rig.device, rig.clock
    assert show(rig) == device.show()
    clock.tick(1_234)  # time moves without a change: the cached answer carries the current time
    assert show(rig) == device.show()
    assert show(rig, detailed=True)["daemon"]["version"] == "test"
    assert ask_ok(rig, ADMIN, "system.standby")  # a durable change
    assert show(rig)["state"] == "PENDING_STANDBY" and show(rig) == device.show()
    clock.tick(1_000)
    rig.dispatcher.tick()  # a timer fired
    assert show(rig)["state"] == "STANDBY" and show(rig) == device.show()
    assert ask_ok(rig, ADMIN, "config.execmode.setup", mode="WEIGHT_STREAMING")
    assert show(rig)["configuredExecmode"] == "WEIGHT_STREAMING" and show(rig) == device.show()
    assert ask_ok(rig, ADMIN, "system.activate")
    clock.tick(1_000)
    rig.dispatcher.tick()
    assert show(rig) == device.show()
    # A run: opened (runHolder), programmed with a compile time, settled by a hot op's call
    # (not a timer) once that time is up: the fabric shown follows each step.
    run = rig.ask(RUNTIME, "run.open", mode="train")["result"]["runId"]
    assert show(rig)["runHolder"]["runId"] == run
    program = dict(PROGRAM, execmode="WEIGHT_STREAMING", size_bytes=10**9)
    assert ask_ok(rig, RUNTIME, "run.program", run_id=run, program=program)
    assert show(rig)["runHolder"]["fabric"] == "PROGRAMMING"
    clock.tick(10**6)
    assert ask_ok(rig, RUNTIME, "run.stream", run_id=run, samples=3)
    assert show(rig)["runHolder"]["fabric"] == "PROGRAMMED" and show(rig) == device.show()
    assert ask_ok(rig, RUNTIME, "run.stream", run_id=run, samples=3)  # counters only: nothing shown moved
    assert show(rig) == device.show()
    assert ask_ok(rig, RUNTIME, "run.close", run_id=run)
    assert show(rig)["runHolder"] is None and show(rig) == device.show()


def test_a_refused_change_leaves_the_cached_answer_true(rig):
    before = show(rig)
    assert rig.ask(RUNTIME, "system.standby")["error"]["code"] == "PERMISSION_DENIED"
    assert rig.ask(ADMIN, "config.execmode.setup", mode="WEIGHT_STREAMING")["error"]["code"] == "INVALID_STATE"
    assert show(rig) == dict(before, time=rig.clock())


def ask_ok(rig, caller, op, **args) -> bool:
    reply = rig.ask(caller, op, **args)
    assert reply["ok"], reply
    return True


def test_a_retried_stream_is_counted_once_and_only_the_last_hot_reply_is_kept(rig):
    run = rig.ask(RUNTIME, "run.open", mode="train")["result"]["runId"]
    assert ask_ok(rig, RUNTIME, "run.program", run_id=run, program=PROGRAM)
    first = rig.ask(RUNTIME, "run.stream", request_id="s-1", run_id=run, samples=5)
    retry = rig.ask(RUNTIME, "run.stream", request_id="s-1", run_id=run, samples=5)
    assert first == retry and first["result"]["totalSamples"] == 5
    assert rig.device.runs.show(run)["totalSamples"] == 5  # counted once
    reused = rig.ask(RUNTIME, "run.stream", request_id="s-1", run_id=run, samples=6)
    assert reused["error"]["code"] == "INVALID_ARGUMENT" and "already used" in reused["error"]["message"]
    assert rig.device.runs.show(run)["totalSamples"] == 5
    for i in range(2, 2_002):
        assert rig.ask(RUNTIME, "run.stream", request_id=f"s-{i}", run_id=run, samples=1)["ok"]
        heartbeat = rig.ask(RUNTIME, "run.heartbeat", request_id=f"h-{i}", run_id=run)
        assert heartbeat["ok"]
    assert rig.device.runs.show(run)["totalSamples"] == 5 + 2_000
    # The last one is still answered from memory, and counted once ...
    again = rig.ask(RUNTIME, "run.heartbeat", request_id="h-2001", run_id=run)
    assert again == heartbeat
    # ... while the memory of 4,000 hot calls is one reply for this client.
    assert len(rig.dispatcher._hot_replies) == 1


def test_hot_replay_memory_is_one_entry_per_client_and_bounded(rig):
    from csadmin.daemon.serve.replies import LastReplies

    last = LastReplies(clients=3)
    for n in range(5):
        for i in range(100):
            last.remember(b"client-%d" % n, f"id-{i}", "fp", b"reply-%d" % i)
    assert len(last) == 3  # the least recently heard clients went first
    assert last.lookup(b"client-4", "id-99", "fp") == b"reply-99"
    assert last.lookup(b"client-4", "id-98", "fp") is None
    assert last.lookup(b"client-0", "id-99", "fp") is None


def test_a_filtered_debug_line_is_never_built(rig):
    class InfoOnly(Log):
        def is_enabled_for(self, level):
            return level >= logging.INFO

    rig.dispatcher.log = quiet = InfoOnly()
    show(rig)
    assert quiet.lines == []
    assert ask_ok(rig, ADMIN, "system.standby")
    assert [line[:2] for line in quiet.lines if line[1] == "request"] == [("info", "request")]
    rig.dispatcher.log = loud = Log()  # DEBUG shown: the line is made
    show(rig)
    assert [(level, event, fields["op"]) for level, event, fields in loud.lines] == [("debug", "request", "system.show")]


def test_cached_replies_are_byte_for_byte_what_encoding_the_answer_gives(rig):
    for request_id in ("a", 7, "é\u2028", 2**63 - 1):
        frame = protocol.request(request_id, "system.show", {})
        reply = rig.dispatcher.submit(ADMIN.session.encode(), frame, ADMIN)  # a read: answered at once
        assert reply == protocol.ok(request_id, rig.device.show())
        assert json.loads(reply)["id"] == request_id


def test_a_read_after_staged_changes_shows_them_committed_or_undone(rig):
    """Group commit stages durable changes; a read commits the group first, and the cached answer
    follows the model whether that commit succeeds or fails (and the group is undone)."""
    dispatcher, device = rig.dispatcher, rig.device
    cached = show(rig)
    staged = protocol.request("g-1", "system.standby", {})
    assert dispatcher.submit(ADMIN.session.encode(), staged, ADMIN) is None  # waits for the group's commit
    assert show(rig)["state"] == "PENDING_STANDBY" and show(rig) == device.show()
    assert [json.loads(reply)["id"] for _, reply in dispatcher.take_ready()] == ["g-1"]
    rig.clock.tick(1_000)
    dispatcher.tick()
    assert show(rig)["state"] == "STANDBY"
    rig.disk.full = True
    toggle = protocol.request("g-2", "config.execmode.setup", {"mode": "WEIGHT_STREAMING"})
    assert dispatcher.submit(ADMIN.session.encode(), toggle, ADMIN) is None
    assert show(rig)["configuredExecmode"] == cached["configuredExecmode"]  # not saved: undone
    assert show(rig) == device.show()
    assert json.loads(dispatcher.take_ready()[0][1])["error"]["code"] == "INTERNAL"


def test_cached_show_follows_faults_with_and_without_events(rig):
    """A fault injected now (an event, DEGRADED), one scheduled for later (no event: the model's
    revision moves) and the timer that injects it: each is in the next cached answer."""
    assert ask_ok(rig, ADMIN, "system.fault.inject", name="temperature-high-warn")
    assert show(rig)["systemHealth"] == "DEGRADED" and show(rig) == rig.device.show()
    assert ask_ok(rig, ADMIN, "system.fault.inject", name="flow-rate-low-warn", after_seconds=5)
    assert show(rig) == rig.device.show()
    rig.clock.tick(5_000)
    rig.dispatcher.tick()
    assert show(rig) == rig.device.show()
