"""system.standby — ramp the system down: ACTIVE → PENDING_STANDBY → STANDBY.

args: force (bool): abort the run holding the fabric, if any, instead of refusing.
Already in STANDBY: success with changed=false. During PENDING_*: INVALID_STATE.
While a run holds the fabric: BUSY naming the run, unless force (the run is then aborted with
reason "system standby --force …" and its runtime sees RUN_ABORTED).
dry_run (bool): check only (the refusal, or `changed` saying whether it would act); nothing changes.
result: {message, changed, state, pendingUntil} (and dryRun: true)
"""

from csadmin.shared import ops

SPEC = ops.SYSTEM_STANDBY


def execute(ctx, args, caller):
    return ctx.device.system.standby(args, origin=caller.origin())
