"""events.show — the kept events, oldest first, filtered like the real CLI's `events show`.

args: event_type (str glob, e.g. "EventActivate*"), from_time (int ms, inclusive),
      max_count (int: the newest N that match), after_seq (int: only events after this seq).
result: {events: [{seq, type, severity, triggerTime, details}], seq (the newest event's)}
"""

from csadmin.shared import ops

SPEC = ops.EVENTS_SHOW


def execute(ctx, args, caller):
    # From the store, csd's event log of record (an indexed query: the cost follows max_count,
    # not the number kept); every event it has emitted is committed before any read is answered.
    log = ctx.device.events
    events = ctx.events(**args.given) if ctx.events else [e.to_dict() for e in log.query(**args.given)]
    return {"events": events, "seq": log.last_seq}
