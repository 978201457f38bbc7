"""system.activate — reboot into the configured execution mode: STANDBY → PENDING_ACTIVE → ACTIVE.

args: dry_run (bool): check only (the refusal, or `changed` saying whether it would act).
Already ACTIVE: success with changed=false. During PENDING_*: INVALID_STATE.
On completion the active execution mode equals the configured one.
result: {message, changed, state, pendingUntil} (and dryRun: true)
"""

from csadmin.shared import ops

SPEC = ops.SYSTEM_ACTIVATE


def execute(ctx, args, caller):
    return ctx.device.system.activate(args, origin=caller.origin())
