"""run.join — join a run as one of its input workers: from then on, stream into it and heartbeat.

args: run_id (str, required); token (str, required): the run's joinToken, from its opener's
      run.open reply; name (str): how the worker is shown in the run's breakdown (default
      worker-N, in order of joining).
The caller needs the operator role and its own key (a worker on another host reaches csd over
the TCP endpoint, with CURVE like everyone). A worker may only run.stream, run.heartbeat and
run.leave; run.program, run.close and runs.abort stay with the opener (PERMISSION_DENIED).
A worker's calls keep the worker alive, not the run: the run's lease is its opener's. A worker
with no call for longer than the run's lease is reported LOST and the run carries on.
Refused: PERMISSION_DENIED (wrong or missing token, or a run that admits no workers: the same
answer, so a stranger learns nothing), BUSY (every slot taken), INVALID_ARGUMENT (the opener
itself, or a name another feeder has), INVALID_STATE (closed run), RUN_ABORTED.
Joining again from the same client: success with changed=false. The token is never logged nor
kept in the audit trail.
result: the run (runs.show's keys), `worker` (the name it feeds under), `changed`, `message`.
"""

from csadmin.shared import ops

SPEC = ops.RUN_JOIN


def execute(ctx, args, caller):
    run = ctx.device.runs.join(args, caller.client)
    verb = "joined" if run["changed"] else "had already joined"
    return {**run, "message": f"{run['worker']} {verb} run {run['runId']} as an input worker; it may stream and "
                              "heartbeat."}
