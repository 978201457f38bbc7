"""runs.show — one run, open or ended.

args: run_id (str, required). NOT_FOUND if no such run is kept.
result: {runId, number, owner, client, mode (train/eval), status (OPEN/CLOSED/ABORTED), fabric
(UNPROGRAMMED/PROGRAMMING/PROGRAMMED), leaseSeconds, leaseUntil (ms or null once ended), openedAt,
program (descriptor or null), programmingStartedAt, programmingUntil, totalSamples, endedAt,
abortReason, performance (performance.json's fields; so far, while open)}
"""

from csadmin.shared import ops

SPEC = ops.RUNS_SHOW


def execute(ctx, args, caller):
    return ctx.device.runs.show(args.run_id)
