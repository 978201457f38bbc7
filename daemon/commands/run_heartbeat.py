"""run.heartbeat — renew the run's lease (the client sends it on its own while a run is open).

args: run_id (str, required).
RUN_ABORTED once the run was aborted (with the reason), INVALID_STATE once closed.
A hot op: the new deadline lives in memory (not fsynced per call).
result: {runId, status, fabric, leaseUntil}
"""

from csadmin.shared import ops

SPEC = ops.RUN_HEARTBEAT


def execute(ctx, args, caller):
    return ctx.device.runs.heartbeat(args, caller.client)
