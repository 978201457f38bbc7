"""runs.list — the kept runs, newest first, and the run holding the fabric.

args: max_count (int ≥ 0): only the newest N.
csd keeps the last 1,000 runs in memory (older ones stay in its store).
result: {runs: [run (runs.show's keys)], runHolder: null or {runId, owner, since, mode, fabric}}
"""

from csadmin.shared import ops

SPEC = ops.RUNS_LIST


def execute(ctx, args, caller):
    return ctx.device.runs.listing(args.max_count)
