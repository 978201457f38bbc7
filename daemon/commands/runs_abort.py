"""runs.abort — abort a run whoever holds it, releasing the fabric (admins only).

args: run_id (str, required); reason (str): recorded and shown to the runtime (default names the
      admin). Its runtime gets RUN_ABORTED with the reason on its next call; dry_run (bool): check
      only (the refusal, or `changed` saying whether it would act).
Already aborted: success with changed=false. A closed run: INVALID_STATE. NOT_FOUND if unknown.
result: the run (runs.show's keys), `changed`, `message`.
"""

from csadmin.shared import ops
from csadmin.shared.opargs import reason

SPEC = ops.RUNS_ABORT


def execute(ctx, args, caller):
    run = ctx.device.runs.abort(args.but(reason=args.reason or f"aborted by an admin ({caller.name})"))
    if not run["changed"]:
        message = f"Run {run['runId']} was already aborted."
    elif run.get("dryRun"):
        message = f"Run {run['runId']} would be aborted."
    else:
        message = f"Run {run['runId']} is aborted; the fabric is free."
    return {**run, "message": message}
