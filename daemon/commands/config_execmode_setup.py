"""config.execmode.setup — choose the execution mode the next `system.activate` boots into.

args: mode (str, required): PIPELINED or WEIGHT_STREAMING; any case, `-` or space for `_`;
      dry_run (bool): check only (the refusal, or `changed` saying whether it would act).
Only in STANDBY (INVALID_STATE otherwise, with the next step). Same mode again: changed=false.
result: {message, changed, state, pendingUntil, execmode, activeExecmode, takesEffectOnActivate}
"""

from csadmin.shared import ops

SPEC = ops.CONFIG_EXECMODE_SETUP


def execute(ctx, args, caller):
    result = ctx.device.system.setup_execmode(args, origin=caller.origin())
    result.update(ctx.device.system.execmode())
    if result.get("dryRun"):  # what it would be
        result["execmode"] = args.mode.value
        result["takesEffectOnActivate"] = result["execmode"] != result["activeExecmode"]
    return result
