"""run.heartbeat — renew the run's lease (the client sends it on its own while a run is open).

args: run_id (str, required).
RUN_ABORTED once the run was aborted (with the reason), INVALID_STATE once closed.
A hot op: the new deadline lives in memory (not fsynced per call).
result: {runId, status, fabric, leaseUntil}
"""

from ..args import Arg, run_id

NAME = "run.heartbeat"
MUTATING = True
DURABLE = False  # hot op: see daemon/dispatch.py
ROLE = "operator"  # the least role allowed (admin > operator > viewer)
ARGS = {"run_id": Arg(str, required=True, parse=run_id, help="the run's id")}


def execute(ctx, args, caller):
    return ctx.device.heartbeat(args["run_id"], caller.client)
