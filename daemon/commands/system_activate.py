"""system.activate — reboot into the configured execution mode: STANDBY → PENDING_ACTIVE → ACTIVE.

args: none.
Already ACTIVE: success with changed=false. During PENDING_*: INVALID_STATE.
On completion the active execution mode equals the configured one.
result: {message, changed, state, pendingUntil}
"""

NAME = "system.activate"
MUTATING = True
ROLE = "admin"  # the least role allowed (admin > operator > viewer)
ARGS = {}


def execute(ctx, args, caller):
    return ctx.device.activate(origin=caller.origin())
