"""run.close — end the run, release the fabric and return its performance record.

args: run_id (str, required); reason (str): the runtime gives up (e.g. it failed): the run ends
      ABORTED with this reason instead of CLOSED.
Closing a closed run again: success with changed=false. RUN_ABORTED if it was aborted.
result: the run (runs.show's keys), `changed`, `message`; `performance` holds the fields of
performance.json: compile_time, est_samples_per_sec, programming_time, samples_per_sec,
suspected_input_bottleneck, total_samples, total_time (seconds).
"""

from csadmin.shared import ops

SPEC = ops.RUN_CLOSE


def execute(ctx, args, caller):
    run = ctx.device.runs.close(args, caller.client)
    if not run["changed"]:
        message = f"Run {run['runId']} is already closed."
    elif run["abortReason"] is not None:
        message = f"Run {run['runId']} was aborted by its runtime: {run['abortReason']}."
    else:
        message = f"Run {run['runId']} is closed; the fabric is free."
    return {**run, "message": message}
