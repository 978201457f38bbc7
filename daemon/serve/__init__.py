"""Serving requests: one request from its frame to its reply, and every change from the model to
the disk to the wire.

    dispatch.py     the request path: admit, decode, look up, authorize, validate, execute
    commit.py       the commit path: stage, commit, publish; hot ops' flush; timers
    group.py        group commit: a loop turn's durable changes, one transaction
    reads.py        cached reads (system.show), encoded once per change of the model
    replies.py      the replies kept so a retry gets its first reply, never a second change
    request_log.py  what is kept of each finished request: metrics, log line, audit record
    audit.py        the audit trail of refusals and denials, rate-limited, written in batches
    context.py      what a command's `execute` gets (Context) and who asked (Caller)
    callers.py      who sent a request: its connection's key name and that key's role
    sockets.py      the ROUTER and PUB sockets, CURVE servers, bound (BindError names the setting)
    capacity.py     the connection gate: connections beyond the descriptors are closed at once
    coalesce.py     rate limits with counted summaries, for what anyone can trigger at will

It may import the ops (daemon/commands/), the store (daemon/store/), the keys (daemon/auth/),
the metrics' interface (daemon/metrics/no_metrics.py), the model and the shared leaves; never
daemon/process/ (tests/test_layers.py).
"""
