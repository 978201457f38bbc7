"""runs.abort — abort a run whoever holds it, releasing the fabric (admins only).

args: run_id (str, required); reason (str): recorded and shown to the runtime (default names the
      admin). Its runtime gets RUN_ABORTED with the reason on its next call.
Already aborted: success with changed=false. A closed run: INVALID_STATE. NOT_FOUND if unknown.
result: the run (runs.show's keys), `changed`, `message`.
"""

from ..args import Arg, label, run_id

NAME = "runs.abort"
MUTATING = True
ROLE = "admin"  # the least role allowed (admin > operator > viewer)
ARGS = {
    "run_id": Arg(str, required=True, parse=run_id, help="the run's id"),
    "reason": Arg(str, parse=label, help="why, shown to the runtime"),
}


def execute(ctx, args, caller):
    reason = args.get("reason") or f"aborted by an admin ({caller.name})"
    run, changed = ctx.device.runs.abort(args["run_id"], reason)
    result = ctx.device.runs.show(run)
    result["changed"] = changed
    result["message"] = (
        f"Run {run.run_id} is aborted; the fabric is free." if changed else f"Run {run.run_id} was already aborted."
    )
    return result
