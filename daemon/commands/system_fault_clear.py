"""system.fault.clear — clear a fault (admins only): `name`, or `all: true` for every fault present
and the loaded scenario's steps still to come (exactly one of the two).

Clearing an active fault emits the health event of what is left (EventHealthOk when nothing is,
else EventHealthDegraded / EventHealthCritical) with details {fault, cleared: true, injected:
true, systemHealth}; clearing an armed or scheduled one disarms or cancels it. A cleared
emergency shutdown leaves the system in STANDBY: activate it. A fault not present: NOT_FOUND
naming the faults present. `all` with nothing present: success with changed=false.
args: name (str); all (bool); dry_run (bool): check only.
result: {message, changed, state, pendingUntil, systemHealth, activeFaults} (and dryRun: true)
"""

from csadmin.shared import ops
from csadmin.errors import InvalidArgument

SPEC = ops.SYSTEM_FAULT_CLEAR


def execute(ctx, args, caller):
    if args.all == (args.name is not None):
        raise InvalidArgument("Give exactly one of `name` and `all: true`.",
                              "Name the fault to clear, or clear every fault with all=true (`--all`).")
    return ctx.device.clear_fault(args, origin=caller.origin())
