"""slurm.job.begin — record the Slurm job the wafer is allocated to (the Slurm prolog's call).

args: job_id (str, required): Slurm's job id (`42`, `42_7`); user (str, required): the job's user.
Runs opened from now on carry the job's id (`slurmJob` in runs.show, runs.list, system.show's
runHolder), until slurm.job.end. The same job again: success with changed=false. BUSY while a run
that belongs to no Slurm job holds the fabric; a run an earlier job left behind (its epilog never
came) is aborted with reason "slurm job J ended", since Slurm gives the wafer to one job at a time.
Admins only (Slurm's scripts run as root with an admin key).
result: {message, changed, slurmJob: {jobId, user, since}, abortedRun (run id or null)}
"""

from csadmin.shared import ops

SPEC = ops.SLURM_JOB_BEGIN


def execute(ctx, args, caller):
    return ctx.device.begin_slurm_job(args)
