"""slurm.job.end — a Slurm job ended (the Slurm epilog's call): free the fabric it held.

args: job_id (str, required): Slurm's job id.
The run the job left holding the fabric, if any, is aborted with reason "slurm job J ended"
(its runtime gets RUN_ABORTED), so the next job gets the wafer at once; csd forgets the job.
A job that holds nothing (ended already, or never began): success with changed=false.
Admins only.
result: {message, changed, abortedRun (run id or null)}
"""

from csadmin.shared import ops

SPEC = ops.SLURM_JOB_END


def execute(ctx, args, caller):
    return ctx.device.end_slurm_job(args)
