"""The request path: decode → look up → validate → execute → persist → encode.

Mutating requests are made durable (device snapshot, new events and the reply, in one
transaction) before their reply leaves, and are idempotent on (client, request id): a retry gets
the first reply, never a second side effect. Nothing here raises to the loop and no traceback
ever goes on the wire.

Hot ops (a command module with `DURABLE = False`: run.stream, run.heartbeat) change only
counters and deadlines in memory. They are not fsynced per call: their reply is cached in memory
only (a retry within the daemon's life still gets the first reply, so samples are never counted
twice), and the runs they touched are written by `tick()` at most `FLUSH_SECONDS` later, or with
the next durable change. A crash loses at most that much of their counters, and a restart aborts
the open run anyway. If a hot op does emit events, it is committed like any other change.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import Callable

from csadmin import protocol
from statemachine.errors import Refused

from .args import ArgError, validate
from .commands import COMMANDS
from .context import Caller, Context
from .store import Store

FLUSH_SECONDS = 1.0  # how stale the stored counters of hot ops may get


class Dispatcher:
    def __init__(
        self,
        ctx: Context,
        store: Store,
        publish: Callable[[dict], None],
        log,
        replies: list[tuple[bytes, str, bytes]] = (),
        keep_replies: int = 10_000,
    ):
        self.ctx = ctx
        self.store = store
        self.publish = publish
        self.log = log
        self.keep_replies = keep_replies
        self._last_flush = time.monotonic()
        self._replies: OrderedDict[tuple[bytes, str], bytes] = OrderedDict(
            ((client, rid), reply) for client, rid, reply in replies
        )
        # Hot ops' replies apart, so a streaming runtime cannot push out the durable ones.
        self._hot_replies: OrderedDict[tuple[bytes, str], bytes] = OrderedDict()

    def handle(self, client: bytes, frame: bytes, caller: Caller) -> bytes:
        """Answer one request. `client` is the socket identity (retry key), `caller` who sent it."""
        started = time.perf_counter()
        request_id = op = None
        mutating = loud = False
        try:
            request_id, op, args = protocol.decode_request(frame)
            command = COMMANDS.get(op)
            if command is None:
                raise protocol.ProtocolError(
                    "UNKNOWN_OP", f"Unknown operation {op!r}.",
                    f"Known operations: {', '.join(sorted(COMMANDS))}.", request_id,
                )
            mutating = command.MUTATING
            loud = mutating and getattr(command, "DURABLE", True)  # hot ops log at DEBUG
            key = (client, str(request_id))
            if mutating:
                cached = self._replies.get(key) or self._hot_replies.get(key)
                if cached is not None:
                    self._log(loud, request_id, op, caller, "replayed", started)
                    return cached
            reply, outcome = self._execute(command, request_id, args, key, caller)
        except protocol.ProtocolError as exc:
            request_id = exc.request_id if request_id is None else request_id
            reply = protocol.error(request_id, exc.code, exc.message, exc.hint)
            outcome = exc.code
        self._log(loud, request_id, op, caller, outcome, started)
        return reply

    def _execute(self, command, request_id, args, key, caller) -> tuple[bytes, str]:
        """Return the reply and its outcome ("ok" or the error code)."""
        events = self.ctx.device.events
        try:
            parsed = validate(command.ARGS, args)
        except ArgError as exc:
            hint = f"Run `cs help` for the command's options (op {command.NAME})."
            return protocol.error(request_id, "INVALID_ARGUMENT", str(exc), hint), "INVALID_ARGUMENT"
        if not command.MUTATING:
            return self._run(command, request_id, parsed, caller)
        device = self.ctx.device
        before, seq_before, runs_before = device.snapshot(), events.last_seq, device.runs.mark()
        reply, outcome = self._run(command, request_id, parsed, caller)
        emitted = events.newest(events.last_seq - seq_before)
        durable = getattr(command, "DURABLE", True) or bool(emitted)
        if outcome == "ok" and durable:
            try:
                self.store.commit(device.snapshot(), emitted, (key[0], key[1], reply), device.runs.take_dirty())
            except Exception:
                # Not durable, so not done: put the model back and say so.
                device.restore(before)
                device.runs.rollback(runs_before)
                events.discard_newest(len(emitted))
                self.log.exception("persist_failed", op=command.NAME, id=request_id)
                reply = protocol.error(
                    request_id, "INTERNAL", "The change could not be saved, so it was not made.",
                    "Check the state directory (disk space, permissions) and the csd log, then retry.",
                )
                return reply, "INTERNAL"  # not remembered: a retry may succeed
        self._remember(self._replies if durable else self._hot_replies, key, reply)
        for event in emitted:
            self.publish(event.to_dict())
        return reply, outcome

    def _run(self, command, request_id, parsed, caller) -> tuple[bytes, str]:
        try:
            return protocol.ok(request_id, command.execute(self.ctx, parsed, caller)), "ok"
        except Refused as exc:
            return protocol.error(request_id, exc.code, exc.message, exc.hint), exc.code
        except Exception:
            self.log.exception("internal_error", op=command.NAME, id=request_id)
            reply = protocol.error(
                request_id, "INTERNAL", f"csd failed while handling {command.NAME}.",
                "This is a bug: the csd log has the details. The request may be retried.",
            )
            return reply, "INTERNAL"

    def _remember(self, cache: OrderedDict, key, reply: bytes) -> None:
        cache[key] = reply
        if len(cache) > self.keep_replies:
            cache.popitem(last=False)

    def tick(self) -> None:
        """Complete a timed transition whose time has come; persist, then publish."""
        device = self.ctx.device
        seq_before = device.events.last_seq
        if not device.advance():
            if device.runs.has_dirty and time.monotonic() - self._last_flush >= FLUSH_SECONDS:
                self._flush([])
            return
        emitted = device.events.newest(device.events.last_seq - seq_before)
        self._flush(emitted)
        for event in emitted:
            self.publish(event.to_dict())
        self.log.info(
            "timers_fired", state=device.lifecycle.value, fabric=device.runs.fabric().value,
            seq=device.events.last_seq, types=[e.type for e in emitted],
        )

    def _flush(self, emitted) -> None:
        """Write the device, `emitted` events and the runs changed since the last write."""
        device = self.ctx.device
        runs = device.runs.take_dirty()
        self._last_flush = time.monotonic()
        # A failed commit here leaves the model ahead of the disk; the next commit or a restart
        # (which rolls the transition forward again) reconciles it, so serving carries on.
        try:
            self.store.commit(device.snapshot(), emitted, runs=runs)
        except Exception:
            device.runs.redirty(runs)
            self.log.exception("persist_failed", op="timer")

    def _log(self, mutating, request_id, op, caller, outcome, started) -> None:
        emit = self.log.info if mutating else self.log.debug
        emit(
            "request", id=request_id, op=op, client=caller.name, role=caller.role,
            outcome=outcome, latency_ms=round((time.perf_counter() - started) * 1000, 3),
        )
