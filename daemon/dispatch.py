"""The request path: admit → decode → look up → authorize → validate → execute → persist → encode.

Admission and authorization come first and fail closed: while the authenticator is down every
request is refused; a connection without a User-Id from our authenticator, or whose key is not
(or no longer) in the registry, is refused; an op above the caller's role is refused with
PERMISSION_DENIED naming the role it needs. Every denial and every mutating request is written
to the audit log (a change and its audit record in one transaction; refusals and denials through
daemon/audit.py, rate-limited per key and written in batches).

A mutating request runs in a transaction on the model (`device.change()`, statemachine/
change.py) and is made durable (device snapshot, new events, changed runs, the reply and its
audit record, in one SQLite transaction) before its reply leaves; refused, failed, or not saved
(a full disk), the change is undone, nothing is published, and the reply says so.

One persistence path: every change to the model — a request's, a hot op's, a timer's — is
staged in the group (daemon/group.py), committed by `commit_group()` (the device, the events, the
runs, the replies and audit records, in one transaction) and only then published. The loop
`submit()`s every request it drained in one turn; the durable changes among them are applied in
order, each in its own inner change, and wait; the loop then calls `commit_group()`, which writes
all of them at once and only then queues their replies (`take_ready()`) and publishes their
events. A commit that fails undoes every request in the group and refuses each (INTERNAL, "not
saved", not remembered: a retry may succeed); a timer's change is kept instead (below). Anything
else that looks at the model — a read, a dry run, a hot op, a retry of a request still in the
group — first commits the group, so no reply ever shows a state that is not durable. Mutating
requests are idempotent on (client, request id): a retry
(same op, same args) gets the first reply, never a second side effect; an id reused for another
request is refused (daemon/replies.py). Nothing here raises to the loop (the loop guards anyway)
and no traceback ever goes on the wire.

Hot ops (an op declared `durable=False` in csadmin/ops.py: run.stream, run.heartbeat) change only
counters and deadlines in memory. They are not fsynced per call: each client's last hot reply is
kept in memory only (a client waits for a reply before its next request, so the last one is the
only one it retries: a retry within the daemon's life gets the first reply, so samples are never
counted twice, and a stream costs no memory per call), and the runs they touched are written by `tick()` at most `FLUSH_SECONDS` later, or with
the next durable change. A crash loses at most that much of their counters, and a restart aborts
the open run anyway. If a hot op does emit events, it is committed at once like any other change.

A timer's change (`tick()`: a transition completing, a fault firing, a lease lapsing) is staged
and committed the same way; if its commit fails it is kept, not undone (it would fire again on
every loop turn while the disk is full): its events are published at once, as the model's
state, and written with the next commit.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from csadmin import errors, protocol

from . import audit
from csadmin.opargs import ArgError, describe, shorten, validate
from .audit import AuditTrail
from .commands import COMMANDS
from .context import Caller, Context
from .group import Group, Staged
from .metrics_facade import NO_METRICS
from .keys import role_allows
from .reads import ReadCache
from .replies import LastReplies, ReplyCache, Reused, fingerprint
from .store import Store, StoreDamaged

FLUSH_SECONDS = 1.0  # how stale the stored counters of hot ops may get


def _not_saved() -> errors.Internal:
    return errors.Internal(
        "The change could not be saved, so it was not made.",
        "Check the state directory (disk space, permissions) and the csd log, then retry.",
    )


def _damaged(exc: StoreDamaged) -> errors.Internal:
    return errors.Internal(
        f"csd's state store is damaged ({exc.damage}); csd is stopping rather than serve or change damaged state.",
        "An admin restores the store from backup, or starts over: csd's log (store_damaged) names the file and the "
        "steps; docs/operations.md, \"The state store's identity\".",
    )


class Dispatcher:
    def __init__(
        self,
        ctx: Context,
        store: Store,
        publish: Callable[[dict], None],
        log,
        authenticator,
        replies=(),
        keep_replies: int = 10_000,
        audit_trail: AuditTrail | None = None,
        metrics=NO_METRICS,
    ):
        """`replies`: the store's (client, id key, fingerprint, reply) rows, oldest first."""
        self.ctx = ctx
        self.auth = authenticator  # anything with `healthy` (bool) and `failure` (why not)
        self.store = store
        self.publish = publish
        self.log = log
        self.audit = audit_trail or AuditTrail(store, log)
        self.metrics = metrics  # daemon/metrics_facade.py: counts requests, denials and commits
        self._last_flush = time.monotonic()
        self._replies = ReplyCache(keep_replies, replies)
        # Hot ops' replies apart, so a streaming runtime cannot push out the durable ones; and
        # only each client's last one (its only retry), so a stream costs no memory per call.
        self._hot_replies = LastReplies()
        self._reads = ReadCache(lambda: self.ctx.device.revision, ctx.device.now)
        self._group = Group(ctx.device)
        self._ready: list[tuple[bytes, bytes]] = []  # (client, reply) committed, to be sent
        self._unsaved_events: list = []  # a timed completion's, whose commit failed: go with the next

    @property
    def log(self):
        return self._logger

    @log.setter
    def log(self, logger) -> None:
        """Set the logger (csd's reload replaces it); a read's DEBUG line is built only if it shows."""
        self._logger = logger
        is_enabled_for = getattr(logger, "is_enabled_for", None)
        self._debug = is_enabled_for(logging.DEBUG) if is_enabled_for else True

    def take_ready(self) -> list[tuple[bytes, bytes]]:
        """The (client, reply) of the changes committed (or refused) by commit_group(), in order."""
        ready, self._ready = self._ready, []
        return ready

    def submit(self, client: bytes, frame: bytes, caller: Caller, parts: int = 1) -> bytes | None:
        """Answer one request, or apply it to the group and return None: a durable change, whose
        reply take_ready() gives after commit_group(). `client` is the socket identity (retry
        key), `caller` who sent it, `parts` how many frames the message had (a request is
        exactly one). Replies queued by a commit this call made go out before its own."""
        started = time.perf_counter()
        if not self.auth.healthy:
            return self._deny(frame, caller, started, "authenticator_down", errors.Internal(
                f"csd refuses every request: its authenticator is down ({self.auth.failure}).",
                "csd fails closed; restart it (`systemctl restart csd`) and read its log for the cause.",
            ))
        if caller.role is None:
            who = f"key {caller.name!r} is" if caller.name else "this connection is"
            return self._deny(frame, caller, started, "unregistered_key", errors.PermissionDenied(
                f"Access denied: {who} not registered with csd.",
                "Ask an admin for a key (`csd keys add NAME --role ROLE`) and pass it with --key or CS_KEY.",
            ))
        request_id = op = None
        mutating = loud = False
        try:
            if parts != 1:
                raise protocol.ProtocolError(errors.BadRequest(
                    f"A request is one frame; this message had {parts}.",
                    "Send each request as a single frame from a DEALER socket.",
                ))
            request_id, op, args = protocol.decode_request(frame)
            command = COMMANDS.get(op)
            if command is None:
                raise protocol.ProtocolError(errors.UnknownOp(
                    f"Unknown operation {shorten(repr(op))}.", f"Known operations: {', '.join(sorted(COMMANDS))}.",
                ), request_id)
            if not role_allows(caller.role, command.SPEC.role):
                return self._deny((request_id, op, args), caller, started, "role", errors.PermissionDenied(
                    f"Permission denied: {op} needs the {command.SPEC.role} role; key {caller.name!r} has {caller.role}.",
                    f"Ask an admin to run it, or to give you a key with the {command.SPEC.role} role.",
                ))
            # A dry run changes nothing: it is answered like a read (no replay, no commit, no audit).
            mutating = command.SPEC.mutating and args.get("dry_run") is not True
            hot = mutating and not command.SPEC.durable
            loud = mutating and not hot  # hot ops log at DEBUG
            if self._group and (not loud or self._group.holds(client, request_id)):
                self.commit_group()  # what follows must see (or answer) only durable state
            fp = fingerprint(op, args) if mutating else ""
            if mutating:
                replayed = self._replayed(client, request_id, fp, command, args, caller)
                if replayed is not None:
                    reply, outcome = replayed
                    self._log(loud, request_id, op, caller, outcome, started)
                    return reply
            if mutating:
                reply, outcome = self._stage(command, request_id, args, client, fp, caller, started, hot)
                if outcome is None:  # staged (its reply waits for the commit), or answered and logged
                    return reply
            else:
                reply, outcome = self._read(command, request_id, args, caller)
        except protocol.ProtocolError as exc:
            request_id = exc.request_id if request_id is None else request_id
            reply = protocol.error(request_id, exc.error)
            outcome = exc.error.code
            asked = COMMANDS.get(exc.op) if exc.op else None
            if asked is not None and asked.SPEC.mutating:  # an attempt at a change, refused unread: audited
                self._audit(caller, exc.op, None, outcome, exc.error.message)
        self._log(loud, request_id, op, caller, outcome, started)
        return reply

    def _replayed(self, client, request_id, fp, command, args, caller) -> tuple[bytes, str] | None:
        """(reply, outcome) for a retry or a reused id; None for a new request."""
        try:
            cached = self._replies.lookup(client, request_id, fp)
            hot = self._hot_replies.lookup(client, request_id, fp) if cached is None else None
        except Reused:
            refusal = errors.InvalidArgument(
                f"Request id {shorten(protocol.id_key(request_id))} was already used by this client for another "
                "request; csd will not answer it with that request's reply.",
                "A retry repeats its request exactly (same op, same args); give every new request a new id.",
            )
            self._audit(caller, command.SPEC.name, args, refusal.code, refusal.message)
            return protocol.error(request_id, refusal), refusal.code
        if cached is not None:
            self._audit(caller, command.SPEC.name, args, "replayed", "a retry, answered with the first reply")
            return cached, "replayed"
        if hot is not None:  # hot ops are not audited (one fsync each)
            return hot, "replayed"
        return None

    def _deny(self, request, caller: Caller, started: float, reason: str, refusal: errors.CsError) -> bytes:
        """Refuse a request before anything else looks at it; audit and log the refusal (both
        rate-limited per key: a flood of denials stays visible as a counted summary, and costs
        little: what is only counted is not formatted). `request`: the frame, or its decoding."""
        if isinstance(request, bytes):
            try:
                request = protocol.decode_request(request)
            except protocol.ProtocolError as exc:
                request = (exc.request_id, None, None)
        request_id, op, args = request
        self.metrics.observe_denial(reason)
        if self.audit.admits(caller.name, op, refusal.code):
            row = audit.record(caller.name, caller.role, op, args, refusal.code, refusal.message)
            self.audit.keep(
                row, "request_denied", id=request_id, op=row[3], client=caller.name, role=caller.role,
                outcome=refusal.code, reason=refusal.message,
                latency_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        return protocol.error(request_id, refusal)

    def _audit(self, caller: Caller, op, args, outcome: str, message: str) -> None:
        """Record a request that changed nothing (rate-limited, written in a batch)."""
        self.audit.add(caller.name, audit.record(caller.name, caller.role, op, args, outcome, message))

    def _validated(self, command, mutating, request_id, args, caller) -> tuple[dict | None, bytes, str]:
        """(parsed args, b"", "") or, refused, (None, reply, code)."""
        try:
            return validate(command.SPEC.args, args), b"", ""
        except ArgError as exc:
            refusal = errors.InvalidArgument(str(exc), protocol.arguments_hint(command.SPEC.name, describe(command.SPEC.args)))
            if mutating:
                self._audit(caller, command.SPEC.name, args, refusal.code, refusal.message)
            return None, protocol.error(request_id, refusal), refusal.code

    def _stage(self, command, request_id, args, client, fp, caller, started, hot) -> tuple[bytes | None, str | None]:
        """Apply a change to the group. A durable one waits for the commit: (None, None). A hot
        op that emitted no event changed only memory: answered at once, (reply, outcome); one
        that did is committed at once: (reply, None), logged. A request refused for its arguments:
        (reply, outcome)."""
        parsed, reply, outcome = self._validated(command, True, request_id, args, caller)
        if parsed is None:
            return reply, outcome
        row, message = None, ""
        try:
            result = self._group.apply(lambda: command.execute(self.ctx, parsed, caller))
            reply, outcome = protocol.ok(request_id, result), "ok"
            row = audit.record(caller.name, caller.role, command.SPEC.name, args, "ok", str(result.get("message", "")))
        except errors.CsError as exc:  # a refusal: the model's rules said no (only this request is undone)
            reply, outcome, message = protocol.error(request_id, exc), exc.code, exc.message
            if exc.keeps_change:  # attempted and failed (an injected fault): its events are committed
                row = audit.record(caller.name, caller.role, command.SPEC.name, args, exc.code, exc.message)
        except Exception:
            failure = self._bug(command, request_id)
            reply, outcome, message = protocol.error(request_id, failure), failure.code, failure.message
        if hot and not self._group.events:  # counters and deadlines in memory: kept, not audited
            self._group.close()
            self._hot_replies.remember(client, request_id, fp, reply)
            return reply, outcome
        self._group.add(Staged(client, request_id, protocol.id_key(request_id), fp, reply, outcome, command.SPEC.name, args,
                               caller, started, row, message, hot))
        if not hot:
            return None, None
        self.commit_group()  # a hot op's reply never waits for the loop's commit
        return self._ready.pop()[1], None

    def commit_group(self, timer: bool = False) -> None:
        """Commit the changes staged since the last call, in one transaction; then queue their
        replies (take_ready()) and publish their events, in order. If the commit fails, every
        request in the group is undone and refused. `timer`: the group holds a timer's change,
        or nothing (the hot ops' counters are due to be written): it is written even if empty,
        and kept if it cannot be (its events go with the next commit)."""
        group = self._group
        if not group and not timer:
            return
        if group:
            self._reads.clear()  # the group changed the model (or is about to be undone): cached reads are stale
        device = self.ctx.device
        runs = []
        try:
            if timer or group.events or any(s.row for s in group.staged):  # else refusals only: nothing changed
                runs = device.unsaved_runs()
                self._write(group.events, runs,
                            [(s.client, s.key, s.fp, s.reply) for s in group.staged if s.row],
                            [s.row for s in group.staged if s.row])
        except Exception as exc:  # not saved (or a bug)
            if timer:
                # A timer's change is kept: the model is ahead of the disk until the next commit
                # writes the device and these events (or a restart rolls the transition forward
                # again), so serving carries on, and its events go out as the model's state now.
                self.log.exception("persist_failed", op="timer")
                self._unsaved_events.extend(group.events)
                self._publish(group.events, group.close())
                return
            staged = group.close(exc)  # the model goes back to before the group
            self.log.exception("persist_failed", ops=[s.op for s in staged], ids=[s.request_id for s in staged])
            failure = _damaged(exc) if isinstance(exc, StoreDamaged) else _not_saved()
            for s in staged:  # not remembered: a retry may succeed
                self._audit(s.caller, s.op, s.args, failure.code, failure.message)
                self._ready.append((s.client, protocol.error(s.request_id, failure)))
                self._log(not s.hot, s.request_id, s.op, s.caller, failure.code, s.started)
            return
        emitted = group.events
        staged = group.close()
        device.runs_saved(runs)
        self._publish(emitted, staged)

    def _publish(self, emitted, staged) -> None:
        """What follows a commit: remember and queue each staged request's reply, then publish
        the events, in order."""
        for s in staged:
            # Refusals are remembered too (in memory), so a retry gets the same answer and an id
            # reused for another request is told apart.
            self._replies.remember(s.client, s.request_id, s.fp, s.reply)
            if s.row is None:
                self._audit(s.caller, s.op, s.args, s.outcome, s.message)
            self._ready.append((s.client, s.reply))
            self._log(not s.hot, s.request_id, s.op, s.caller, s.outcome, s.started)
        for event in emitted:
            self.publish(event.to_dict())

    def _read(self, command, request_id, args, caller) -> tuple[bytes, str]:
        """Answer a read (or a dry run): from the read cache when the op is CACHED."""
        parsed, reply, outcome = self._validated(command, False, request_id, args, caller)
        if parsed is None:
            return reply, outcome
        try:
            if command.SPEC.cached:
                return self._reads.answer(command.SPEC.name, parsed, request_id,
                                          lambda: command.execute(self.ctx, parsed, caller)), "ok"
            return protocol.ok(request_id, command.execute(self.ctx, parsed, caller)), "ok"
        except errors.CsError as exc:  # e.g. NOT_FOUND
            return protocol.error(request_id, exc), exc.code
        except StoreDamaged as exc:  # the store set `damaged`: the loop stops csd after this turn
            return protocol.error(request_id, _damaged(exc)), errors.Internal.code
        except Exception:
            failure = self._bug(command, request_id)
            return protocol.error(request_id, failure), failure.code

    def _bug(self, command, request_id) -> errors.Internal:
        """Log the exception being handled (with its traceback) and say it on the wire without one."""
        self.log.exception("internal_error", op=command.SPEC.name, id=request_id)
        return errors.Internal(f"csd failed while handling {command.SPEC.name}.")

    def _write(self, events, runs, replies=(), rows=()) -> None:
        """One transaction: the device, `events`, `runs`, `replies`, the audit `rows`, and what
        is waiting to be written (batched refusals, a failed timer commit's events). Raises what
        the store raised, with everything still waiting."""
        waiting = self.audit.take()
        if self._unsaved_events:
            events = [*self._unsaved_events, *events]
        try:
            began = time.perf_counter()
            self.store.commit(self.ctx.device.snapshot(), events, replies, runs, [*waiting, *rows])
            self.metrics.observe_commit(time.perf_counter() - began)
        except Exception:
            self.audit.give_back(waiting)
            raise
        self._unsaved_events = []

    def tick(self) -> None:
        """Complete what a timer made due (in the group: staged, committed, then published), or
        write the hot ops' counters once they are FLUSH_SECONDS old. Write the audit records
        that are due."""
        self.commit_group()  # the loop commits it first; a timer must never fire inside a group
        self.audit.tick()
        try:
            self.store.record_progress()
        except OSError as exc:  # not fatal: the record is a safety check, retried next time
            self.log.error("identity_write_failed", path=self.store.identity.path, reason=str(exc))
        device = self.ctx.device
        due = device.next_deadline()
        advanced = due is not None and due <= device.now() and self._group.apply(device.advance)
        if not advanced:
            self._group.close()  # nothing changed (or nothing was due)
            if not (device.has_unsaved_runs() and time.monotonic() - self._last_flush >= FLUSH_SECONDS):
                return
        emitted = self._group.events
        self._last_flush = time.monotonic()
        self.commit_group(timer=True)
        if advanced:
            self.log.info(
                "timers_fired", state=device.lifecycle.value, fabric=device.fabric(),
                seq=device.events.last_seq, types=[e.type for e in emitted],
            )

    def _log(self, mutating, request_id, op, caller, outcome, started) -> None:
        seconds = time.perf_counter() - started
        self.metrics.observe_request(op, outcome, seconds)
        if not (mutating or self._debug):  # a filtered DEBUG line: not even its fields are built
            return
        emit = self.log.info if mutating else self.log.debug
        emit(
            "request", id=request_id, op=op, client=caller.name, role=caller.role,
            outcome=outcome, latency_ms=round(seconds * 1000, 3),
        )
