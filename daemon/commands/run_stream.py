"""run.stream — report samples fed to the programmed fabric; renews the lease.

args: run_id (str, required); samples (int ≥ 0, required): samples fed since the last report.
The device consumes at most the program's est_samples_per_sec; the performance record says so.
Only once PROGRAMMED (INVALID_STATE before); RUN_ABORTED once aborted, with the reason.
A hot op: counted in memory (not fsynced per call), written at most ~1 s later and at close; a
retry with the same request id gets the first reply (samples are not counted twice).
result: {runId, status, fabric, totalSamples, leaseUntil}
"""

from csadmin.shared import ops

SPEC = ops.RUN_STREAM


def execute(ctx, args, caller):
    result = ctx.device.runs.stream(args, caller.client)
    ctx.metrics.observe_samples(args.samples)  # accepted (a retry is answered before this)
    return result
