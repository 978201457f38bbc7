"""run.program — program the run's fabric with a compiled artifact, once per run.

args: run_id (str, required); program (object, required): the compiled artifact's descriptor,
      exactly these fields: fingerprint (str), target_system (str, the serial it was compiled
      for), execmode (str), mode (`train`/`eval`), compile_time (number, s), est_samples_per_sec
      (number > 0), size_bytes (int ≥ 0). A missing, unknown or wrong-typed field: INVALID_ARGUMENT;
      workers (int, 0..64): input worker slots, as with run.open, for a run opened without them
      (the reply then carries the `joinToken`; INVALID_ARGUMENT if run.open asked already).
Refused: INCOMPATIBLE_PROGRAM (another system, execution mode or run mode, or train_and_eval),
REPROGRAM_FORBIDDEN (already programmed, or programming, in this run), RUN_ABORTED, INVALID_STATE
(closed run), NOT_FOUND, PERMISSION_DENIED (another client's run).
Programming takes size_bytes / (csd --program-bytes-per-second) of simulated time: the fabric is
PROGRAMMING until `programmingUntil`, then PROGRAMMED (EventProgrammingFinished).
Idempotent on the request id: a retried request gets the first reply and programs once.
result: the run (runs.show's keys), `message` and, with workers, `joinToken`.
"""

from csadmin.shared import ops

from ..auth import join_tokens

SPEC = ops.RUN_PROGRAM


def execute(ctx, args, caller):
    token, digest = join_tokens.draw(args.workers)
    run = ctx.device.runs.program(args, caller.client, digest)
    message = f"Programming the fabric for run {run['runId']} (until {run['programmingUntil']} ms)."
    return join_tokens.handed_out({**run, "message": message}, token, args.workers)
