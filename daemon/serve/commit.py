"""The commit path: every change to the model is made durable, then answered, then published.

One persistence path: every change to the model — a request's, a hot op's, a timer's — is
staged in the group (daemon/serve/group.py), committed by `commit()` (the device, the events, the runs,
the replies and audit records, in one transaction) and only then published. The request path
(daemon/serve/dispatch.py) applies the durable requests of one loop turn to the group, in order; the
loop then calls `commit()`, which writes all of them at once and only then queues their replies
(`take_ready()`) and publishes their events. A commit that fails undoes every request in the
group and refuses each (INTERNAL, "not saved", not remembered: a retry may succeed).

Hot ops' counters (run.stream, run.heartbeat) are written by `tick()` at most `FLUSH_SECONDS`
after they changed, or with the next durable change: a crash loses at most that much of them.

A timer's change (`tick()`: a transition completing, a fault firing, a lease lapsing) is staged
and committed the same way; if its commit fails it is kept, not undone (it would fire again on
every loop turn while the disk is full): its events are published at once, as the model's
state, and written with the next commit.
"""

from __future__ import annotations

import time
from typing import Callable

from csadmin import errors
from csadmin.shared import protocol

from ..store.store import Store, StoreDamaged
from .context import Context
from .group import Group
from .reads import ReadCache
from .replies import ReplyCache
from .request_log import RequestLog

FLUSH_SECONDS = 1.0  # how stale the stored counters of hot ops may get


def not_saved() -> errors.Internal:
    return errors.Internal(
        "The change could not be saved, so it was not made.",
        "Check the state directory (disk space, permissions) and the csd log, then retry.",
    )


def damaged(exc: StoreDamaged) -> errors.Internal:
    return errors.Internal(
        f"csd's state store is damaged ({exc.damage}); csd is stopping rather than serve or change damaged state.",
        "An admin restores the store from backup, or starts over: csd's log (store_damaged) names the file and the "
        "steps; docs/operations.md, \"The state store's identity\".",
    )


class Committer:
    def __init__(self, ctx: Context, store: Store, publish: Callable[[dict], None], requests: RequestLog,
                 group: Group, replies: ReplyCache, reads: ReadCache):
        self.ctx = ctx
        self.store = store
        self.publish = publish
        self.requests = requests
        self.group = group  # shared with the request path, which stages into it
        self._replies = replies  # what a retry is answered with
        self._reads = reads  # cleared by every change
        self.ready: list[tuple[bytes, bytes]] = []  # (client, reply) committed, to be sent
        self._unsaved_events: list = []  # a timed completion's, whose commit failed: go with the next
        self._last_flush = time.monotonic()

    def take_ready(self) -> list[tuple[bytes, bytes]]:
        """The (client, reply) of the changes committed (or refused) by commit(), in order."""
        ready, self.ready = self.ready, []
        return ready

    def commit(self, timer: bool = False) -> None:
        """Commit the changes staged since the last call, in one transaction; then queue their
        replies (take_ready()) and publish their events, in order. If the commit fails, every
        request in the group is undone and refused. `timer`: the group holds a timer's change,
        or nothing (the hot ops' counters are due to be written): it is written even if empty,
        and kept if it cannot be (its events go with the next commit)."""
        group = self.group
        if not group and not timer:
            return
        if group:
            self._reads.clear()  # the group changed the model (or is about to be undone): cached reads are stale
        device = self.ctx.device
        runs = []
        try:
            if timer or group.events or any(s.row for s in group.staged):  # else refusals only: nothing changed
                runs = device.run_book.unsaved()
                self._write(group.events, runs,
                            [(s.client, s.key, s.fp, s.reply) for s in group.staged if s.row],
                            [s.row for s in group.staged if s.row])
        except Exception as exc:  # not saved (or a bug)
            if timer:
                # A timer's change is kept: the model is ahead of the disk until the next commit
                # writes the device and these events (or a restart rolls the transition forward
                # again), so serving carries on, and its events go out as the model's state now.
                self.requests.log.exception("persist_failed", op="timer")
                self._unsaved_events.extend(group.events)
                self._publish(group.events, group.close())
                return
            staged = group.close(exc)  # the model goes back to before the group
            self.requests.log.exception("persist_failed", ops=[s.op for s in staged],
                                        ids=[s.request_id for s in staged])
            failure = damaged(exc) if isinstance(exc, StoreDamaged) else not_saved()
            for s in staged:  # not remembered: a retry may succeed
                self.requests.refused(s.caller, s.op, s.args, failure.code, failure.message)
                self.ready.append((s.client, protocol.error(s.request_id, failure)))
                self.requests.done(not s.hot, s.request_id, s.op, s.caller, failure.code, s.started)
            return
        emitted = group.events
        staged = group.close()
        device.run_book.saved(runs)
        self._publish(emitted, staged)

    def _publish(self, emitted, staged) -> None:
        """What follows a commit: remember and queue each staged request's reply, then publish
        the events, in order."""
        for s in staged:
            # Refusals are remembered too (in memory), so a retry gets the same answer and an id
            # reused for another request is told apart.
            self._replies.remember(s.client, s.request_id, s.fp, s.reply)
            if s.row is None:
                self.requests.refused(s.caller, s.op, s.args, s.outcome, s.message)
            self.ready.append((s.client, s.reply))
            self.requests.done(not s.hot, s.request_id, s.op, s.caller, s.outcome, s.started)
        for event in emitted:
            self.publish(event.to_dict())

    def _write(self, events, runs, replies=(), rows=()) -> None:
        """One transaction: the device, `events`, `runs`, `replies`, the audit `rows`, and what
        is waiting to be written (batched refusals, a failed timer commit's events). Raises what
        the store raised, with everything still waiting."""
        trail = self.requests.audit
        waiting = trail.take()
        if self._unsaved_events:
            events = [*self._unsaved_events, *events]
        try:
            began = time.perf_counter()
            self.store.commit(self.ctx.device.snapshot(), events, replies, runs, [*waiting, *rows])
            self.requests.metrics.observe_commit(time.perf_counter() - began)
        except Exception:
            trail.give_back(waiting)
            raise
        self._unsaved_events = []

    def tick(self) -> None:
        """Complete what a timer made due (in the group: staged, committed, then published), or
        write the hot ops' counters once they are FLUSH_SECONDS old. Write the audit records
        that are due."""
        self.commit()  # the loop commits it first; a timer must never fire inside a group
        self.requests.audit.tick()
        try:
            self.store.record_progress()
        except OSError as exc:  # not fatal: the record is a safety check, retried next time
            self.requests.log.error("identity_write_failed", path=self.store.identity.path, reason=str(exc))
        device = self.ctx.device
        due = device.next_deadline()
        advanced = due is not None and due <= device.now() and self.group.apply(device.advance)
        if not advanced:
            self.group.close()  # nothing changed (or nothing was due)
            if not (device.run_book.has_unsaved and time.monotonic() - self._last_flush >= FLUSH_SECONDS):
                return
        emitted = self.group.events
        self._last_flush = time.monotonic()
        self.commit(timer=True)
        if advanced:
            self.requests.log.info(
                "timers_fired", state=device.lifecycle.value, fabric=device.fabric(),
                seq=device.events.last_seq, types=[e.type for e in emitted],
            )
