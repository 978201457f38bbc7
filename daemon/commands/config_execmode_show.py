"""config.execmode.show — the configured execution mode (and the active one).

args: none.
result: {execmode (configured), activeExecmode, takesEffectOnActivate}
"""

NAME = "config.execmode.show"
MUTATING = False
ARGS = {}


def execute(ctx, args):
    return ctx.device.execmode()
