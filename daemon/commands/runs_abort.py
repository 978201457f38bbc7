"""runs.abort — abort a run whoever holds it, releasing the fabric (admins only).

args: run_id (str, required); reason (str): recorded and shown to the runtime (default names the
      admin). Its runtime gets RUN_ABORTED with the reason on its next call; dry_run (bool): check
      only (the refusal, or `changed` saying whether it would act).
Already aborted: success with changed=false. A closed run: INVALID_STATE. NOT_FOUND if unknown.
result: the run (runs.show's keys), `changed`, `message`.
"""

from ..args import DRY_RUN, Arg, reason, run_id

NAME = "runs.abort"
MUTATING = True
ROLE = "admin"  # the least role allowed (admin > operator > viewer)
ARGS = {
    "run_id": Arg(str, required=True, parse=run_id, help="the run's id"),
    "reason": Arg(str, parse=reason, help="why, shown to the runtime"),
    "dry_run": DRY_RUN,
}


def execute(ctx, args, caller):
    reason = args.get("reason") or f"aborted by an admin ({caller.name})"
    dry_run = bool(args.get("dry_run"))
    run, changed = ctx.device.runs.abort(args["run_id"], reason, dry_run=dry_run)
    result = ctx.device.runs.show(run)
    result["changed"] = changed
    if dry_run:
        result["dryRun"] = True
        result["message"] = f"Run {run.run_id} would be aborted." if changed else f"Run {run.run_id} was already aborted."
        return result
    result["message"] = (
        f"Run {run.run_id} is aborted; the fabric is free." if changed else f"Run {run.run_id} was already aborted."
    )
    return result
