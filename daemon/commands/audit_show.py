"""audit.show — the audit log: every mutating request and every denial, oldest first.

args: max_count (int, default 100): only the newest N records.
result: {entries: [{time (ms), name (key), role, op, args (JSON text), outcome ("ok" or the
         error code), message}]}
Admins only. Read from the state store (audit reads are rare; the log can be long).
"""

from csadmin.shared import ops

SPEC = ops.AUDIT_SHOW


def execute(ctx, args, caller):
    return {"entries": ctx.audit_entries(args.max_count)}
