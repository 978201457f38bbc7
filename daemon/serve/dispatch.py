"""The request path: admit → decode → look up → authorize → validate → execute → persist → encode.

Admission and authorization come first and fail closed: while the authenticator is down every
request is refused; a connection without a User-Id from our authenticator, or whose key is not
(or no longer) in the registry, is refused; an op above the caller's role is refused with
PERMISSION_DENIED naming the role it needs. Every denial and every mutating request is written
to the audit log (a change and its audit record in one transaction; refusals and denials through
daemon/serve/audit.py, rate-limited per key and written in batches).

A mutating request runs in a transaction on the model (`device.change()`, statemachine/
change.py) and is made durable (device snapshot, new events, changed runs, the reply and its
audit record, in one SQLite transaction) before its reply leaves; refused, failed, or not saved
(a full disk), the change is undone, nothing is published, and the reply says so.

Every change — a request's, a hot op's, a timer's — goes one way: applied to the group
(daemon/serve/group.py), committed with the others of the loop's turn, then answered and published
(daemon/serve/commit.py, which also says what a failed commit does). The loop `submit()`s every request
it drained in one turn, then calls `commit_group()`. Anything else that looks at the model — a
read, a dry run, a hot op, a retry of a request still in the group — first commits the group, so
no reply ever shows a state that is not durable. Mutating requests are idempotent on (client,
request id): a retry (same op, same args) gets the first reply, never a second side effect; an id
reused for another request is refused (daemon/serve/replies.py). Nothing here raises to the loop (the
loop guards anyway) and no traceback ever goes on the wire.

Hot ops (an op declared `durable=False` in csadmin/shared/ops.py: run.stream, run.heartbeat) change only
counters and deadlines in memory. They are not fsynced per call: each client's last hot reply is
kept in memory only (a client waits for a reply before its next request, so the last one is the
only one it retries: a retry within the daemon's life gets the first reply, so samples are never
counted twice, and a stream costs no memory per call); the commit path writes their runs at most
a second later. If a hot op does emit events, it is committed at once like any other change.
"""

from __future__ import annotations

import time
from typing import Callable

from csadmin import errors
from csadmin.shared import protocol
from csadmin.shared.opargs import ArgError, Args, describe, shorten, validate

from ..auth.key_registry import role_allows
from ..commands import COMMANDS
from ..metrics.no_metrics import NO_METRICS
from ..store.store import Store, StoreDamaged
from . import audit
from .audit import AuditTrail
from .commit import Committer, damaged
from .context import Caller, Context
from .group import Group, Staged
from .reads import ReadCache
from .replies import LastReplies, ReplyCache, Reused, fingerprint
from .request_log import RequestLog


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
        self.audit = audit_trail or AuditTrail(store, log)
        self.metrics = metrics  # daemon/metrics/no_metrics.py: counts requests, denials and commits
        self._requests = RequestLog(log, self.audit, metrics)
        self._replies = ReplyCache(keep_replies, replies)
        # Hot ops' replies apart, so a streaming runtime cannot push out the durable ones; and
        # only each client's last one (its only retry), so a stream costs no memory per call.
        self._hot_replies = LastReplies()
        self._reads = ReadCache(lambda: self.ctx.device.revision, ctx.device.now)
        self._group = Group(ctx.device)
        self._commit = Committer(ctx, store, publish, self._requests, self._group, self._replies, self._reads)

    def commit_group(self) -> None:
        """Commit the durable changes submitted since the last call (the loop's, once per turn);
        then take_ready() gives their replies (daemon/serve/commit.py)."""
        self._commit.commit()

    def take_ready(self) -> list[tuple[bytes, bytes]]:
        """The (client, reply) of the changes committed (or refused) by commit_group(), in order."""
        return self._commit.take_ready()

    def tick(self) -> None:
        """Complete what a timer made due, write hot ops' counters and the audit records that are due."""
        self._commit.tick()

    @property
    def log(self):
        return self._requests.log

    @log.setter
    def log(self, logger) -> None:
        self._requests.log = logger  # csd's reload replaces it

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
                    self._requests.done(loud, request_id, op, caller, outcome, started)
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
                self._requests.refused(caller, exc.op, None, outcome, exc.error.message)
        self._requests.done(loud, request_id, op, caller, outcome, started)
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
            self._requests.refused(caller, command.SPEC.name, args, refusal.code, refusal.message)
            return protocol.error(request_id, refusal), refusal.code
        if cached is not None:
            self._requests.refused(caller, command.SPEC.name, args, "replayed", "a retry, answered with the first reply")
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

    def _validated(self, command, mutating, request_id, args, caller) -> tuple[Args | None, bytes, str]:
        """(the request's arguments, built once from the op's declaration, b"", "") or, refused,
        (None, reply, code)."""
        try:
            return Args(command.SPEC.args, validate(command.SPEC.args, args)), b"", ""
        except ArgError as exc:
            spec = command.SPEC
            refusal = errors.InvalidArgument(str(exc), protocol.arguments_hint(spec.name, describe(spec.args)))
            if mutating:
                self._requests.refused(caller, command.SPEC.name, args, refusal.code, refusal.message)
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
        self._group.add(Staged(client, request_id, protocol.id_key(request_id), fp, reply, outcome, command.SPEC.name,
                               args, caller, started, row, message, hot))
        if not hot:
            return None, None
        self.commit_group()  # a hot op's reply never waits for the loop's commit
        return self._commit.ready.pop()[1], None

    def _read(self, command, request_id, args, caller) -> tuple[bytes, str]:
        """Answer a read (or a dry run): from the read cache when the op is `cached`."""
        parsed, reply, outcome = self._validated(command, False, request_id, args, caller)
        if parsed is None:
            return reply, outcome
        try:
            if command.SPEC.cached:
                return self._reads.answer(command.SPEC.name, parsed.given, request_id,
                                          lambda: command.execute(self.ctx, parsed, caller)), "ok"
            return protocol.ok(request_id, command.execute(self.ctx, parsed, caller)), "ok"
        except errors.CsError as exc:  # e.g. NOT_FOUND
            return protocol.error(request_id, exc), exc.code
        except StoreDamaged as exc:  # the store set `damaged`: the loop stops csd after this turn
            return protocol.error(request_id, damaged(exc)), errors.Internal.code
        except Exception:
            failure = self._bug(command, request_id)
            return protocol.error(request_id, failure), failure.code

    def _bug(self, command, request_id) -> errors.Internal:
        """Log the exception being handled (with its traceback) and say it on the wire without one."""
        self.log.exception("internal_error", op=command.SPEC.name, id=request_id)
        return errors.Internal(f"csd failed while handling {command.SPEC.name}.")
