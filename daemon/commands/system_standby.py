"""system.standby — ramp the system down: ACTIVE → PENDING_STANDBY → STANDBY.

args: none.
Already in STANDBY: success with changed=false. During PENDING_*: INVALID_STATE.
result: {message, changed, state, pendingUntil}
"""

NAME = "system.standby"
MUTATING = True
ARGS = {}


def execute(ctx, args):
    return ctx.device.standby()
