"""config.execmode.show — the configured execution mode (and the active one).

args: none.
result: {execmode (configured), activeExecmode, takesEffectOnActivate}
"""

NAME = "config.execmode.show"
MUTATING = False
ROLE = "viewer"  # the least role allowed (admin > operator > viewer)
ARGS = {}


def execute(ctx, args, caller):
    return ctx.device.execmode()
