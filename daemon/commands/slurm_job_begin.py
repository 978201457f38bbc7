"""slurm.job.begin — record the Slurm job the wafer is allocated to (the Slurm prolog's call).

args: job_id (str, required): Slurm's job id (`42`, `42_7`); user (str, required): the job's user.
Runs opened from now on carry the job's id (`slurmJob` in runs.show, runs.list, system.show's
runHolder), until slurm.job.end. The same job again: success with changed=false. BUSY while a run
that belongs to no Slurm job holds the fabric; a run an earlier job left behind (its epilog never
came) is aborted with reason "slurm job J ended", since Slurm gives the wafer to one job at a time.
Admins only (Slurm's scripts run as root with an admin key).
result: {message, changed, slurmJob: {jobId, user, since}, abortedRun (run id or null)}
"""

from csadmin.statemachine.slurm_jobs import parse_job_id

from ..args import Arg, label

NAME = "slurm.job.begin"
MUTATING = True
ROLE = "admin"  # the least role allowed (admin > operator > viewer)
ARGS = {
    "job_id": Arg(str, required=True, parse=parse_job_id, help="Slurm's job id"),
    "user": Arg(str, required=True, parse=label, help="the job's user"),
}


def execute(ctx, args, caller):
    return ctx.device.begin_slurm_job(args["job_id"], args["user"])
