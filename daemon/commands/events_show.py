"""events.show — the kept events, oldest first, filtered like the real CLI's `events show`.

args: event_type (str glob, e.g. "EventActivate*"), from_time (int ms, inclusive),
      max_count (int: the newest N that match), after_seq (int: only events after this seq).
result: {events: [{seq, type, severity, triggerTime, details}], seq (the newest event's)}
"""

from ..args import Arg, glob, non_negative

NAME = "events.show"
MUTATING = False
ROLE = "viewer"  # the least role allowed (admin > operator > viewer)
ARGS = {
    "event_type": Arg(str, parse=glob, help="glob on the event type"),
    "from_time": Arg(int, parse=non_negative, help="ms since the epoch"),
    "max_count": Arg(int, parse=non_negative),
    "after_seq": Arg(int, parse=non_negative),
}


def execute(ctx, args, caller):
    # From the store, csd's event log of record (an indexed query: the cost follows max_count,
    # not the number kept); every event it has emitted is committed before any read is answered.
    log = ctx.device.events
    events = ctx.events(**args) if ctx.events else [e.to_dict() for e in log.query(**args)]
    return {"events": events, "seq": log.last_seq}
