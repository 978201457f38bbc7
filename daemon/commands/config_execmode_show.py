"""config.execmode.show — the configured execution mode (and the active one).

args: none.
result: {execmode (configured), activeExecmode, takesEffectOnActivate}
"""

from csadmin.shared import ops

SPEC = ops.CONFIG_EXECMODE_SHOW


def execute(ctx, args, caller):
    return ctx.device.system.execmode()
