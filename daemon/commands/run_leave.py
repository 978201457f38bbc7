"""run.leave — an input worker is done feeding its run (it is then reported LEFT, not LOST).

args: run_id (str, required).
Only a worker that joined the run (PERMISSION_DENIED otherwise: the opener closes the run).
Leaving again: success with changed=false. INVALID_STATE (closed run), RUN_ABORTED.
result: the run (runs.show's keys), `worker`, `changed`, `message`.
"""

from csadmin.shared import ops

SPEC = ops.RUN_LEAVE


def execute(ctx, args, caller):
    run = ctx.device.runs.leave(args, caller.client)
    verb = "left" if run["changed"] else "had already left"
    return {**run, "message": f"{run['worker']} {verb} run {run['runId']}."}
