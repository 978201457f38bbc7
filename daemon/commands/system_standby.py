"""system.standby — ramp the system down: ACTIVE → PENDING_STANDBY → STANDBY.

args: none.
Already in STANDBY: success with changed=false. During PENDING_*: INVALID_STATE.
result: {message, changed, state, pendingUntil}
"""

NAME = "system.standby"
MUTATING = True
ROLE = "admin"  # the least role allowed (admin > operator > viewer)
ARGS = {}


def execute(ctx, args, caller):
    return ctx.device.standby(origin=caller.origin())
