"""run.open — open a run: it holds the wafer's fabric until it is closed or aborted.

args: mode (str, required): `train` or `eval` (`train_and_eval` is refused: the fabric cannot be
      reprogrammed for eval after train in one run); owner (str): a label for the runtime, e.g.
      the job name (default: the caller's name); lease_seconds (number, 0 < s ≤ 3600): the run is
      aborted if no call from its runtime arrives for this long (default: csd --lease-seconds);
      workers (int, 0..64): input worker slots (default 0): with N > 0 the reply carries a
      `joinToken` that N input workers pass to run.join (on this host or another, each with its
      own operator key) to stream into this run; model_dir (str): where the runtime keeps the
      run's artifacts (a cstorch model_dir), shown by runs.show for people (csd never opens it).
Only when ACTIVE (INVALID_STATE otherwise). BUSY while another run holds the fabric, naming it.
The run belongs to the calling client: only it may program, close or abort it, and only it
renews its lease; its input workers may stream and heartbeat.
The join token is a secret: it is in this reply only (csd keeps its SHA-256, never logs it and
never shows it in runs.show, events or the audit trail). A retried run.open gets the same reply.
result: the run (runs.show's keys), `message` and, with workers, `joinToken`.
"""

from csadmin.shared import ops

from ..auth import join_tokens

SPEC = ops.RUN_OPEN


def execute(ctx, args, caller):
    token, digest = join_tokens.draw(args.workers)
    run = ctx.device.runs.open(args.but(owner=args.owner or caller.name), caller.client, digest)
    message = f"Run {run['runId']} is open and holds the fabric; program it with run.program."
    return join_tokens.handed_out({**run, "message": message}, token, args.workers)
