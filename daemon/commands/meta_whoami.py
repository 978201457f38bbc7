"""meta.whoami — who the daemon thinks is calling.

args: none.
result: {name, role, session}: the caller's key name (from its CURVE key), role
(admin, operator, viewer) and session (this connection's identity, as in events' `details.by`).
"""

from csadmin.shared import ops

SPEC = ops.META_WHOAMI


def execute(ctx, args, caller):
    return {"name": caller.name, "role": caller.role, "session": caller.session}
