"""The Slurm job the wafer is allocated to (docs/slurm.md).

On a Slurm node the CS-2 is a GRES of count 1, so Slurm gives it to one job at a time. The job's
prolog tells csd which job that is (`slurm.job.begin`); runs opened from then on carry the job's
id, and its epilog (`slurm.job.end`) aborts whatever run the job left holding the fabric. csd
records what Slurm says and does not ask Slurm itself. This module holds the record and the
rules of a job's beginning and end (`begin_job`, `end_job`: pure, the device keeps the job they
return); a job id is checked as an op's argument (csadmin/shared/opargs.py, job_id).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runs import Runs


@dataclass(frozen=True)
class SlurmJob:
    """A Slurm job holding the wafer: Slurm's job id, its user, and since when (ms)."""

    job_id: str
    user: str
    since: int

    def to_dict(self) -> dict:
        return {"jobId": self.job_id, "user": self.user, "since": self.since}

    @classmethod
    def from_dict(cls, d: dict) -> "SlurmJob":
        return cls(job_id=str(d["jobId"]), user=str(d["user"]), since=int(d["since"]))



def ended_reason(job_id: str) -> str:
    """Why a run its job left behind was aborted, as its runtime and `runs show` report it."""
    return f"slurm job {job_id} ended"


def begin_job(current: SlurmJob | None, runs: "Runs", job_id: str, user: str, now: int) -> tuple[SlurmJob, dict]:
    """Slurm gave the wafer to `job_id` (its prolog says so): runs opened from now on carry it.
    A run that belongs to no Slurm job keeps the fabric (BUSY: Slurm cannot give away what
    someone outside it holds); a run an earlier job left behind (its epilog never came) is
    aborted, since Slurm gives the wafer to one job at a time. Repeating it changes nothing.
    Returns the job now holding the wafer and the reply."""
    holder = runs.holder
    if current is not None and current.job_id == job_id:
        return current, {"message": f"Slurm job {job_id} already holds the wafer.", "changed": False,
                         "slurmJob": current.to_dict(), "abortedRun": None}
    if holder is not None and holder.slurm_job is None:
        raise runs.busy_error(f"Slurm job {job_id} cannot be given the wafer while a run outside Slurm holds it")
    aborted = None
    if holder is not None and holder.slurm_job != job_id:
        aborted = runs.abort_holder(ended_reason(holder.slurm_job), "slurm_job_ended").run_id
    job = SlurmJob(job_id, user, now)
    message = f"Slurm job {job_id} ({user}) holds the wafer; runs opened from now on carry its id."
    if aborted:
        message += f" Run {aborted}, left by Slurm job {holder.slurm_job}, was aborted."
    return job, {"message": message, "changed": True, "slurmJob": job.to_dict(), "abortedRun": aborted}


def end_job(current: SlurmJob | None, runs: "Runs", job_id: str) -> tuple[SlurmJob | None, dict]:
    """Slurm job `job_id` ended (its epilog says so): abort the run it left holding the fabric
    (reason "slurm job J ended"), so the next job gets the wafer at once, and forget the job.
    Repeating it, or ending a job csd never heard of, changes nothing. Returns the job still
    holding the wafer (None once forgotten) and the reply."""
    holder = runs.holder
    aborted = None
    if holder is not None and holder.slurm_job == job_id:
        aborted = runs.abort_holder(ended_reason(job_id), "slurm_job_ended").run_id
    forgot = current is not None and current.job_id == job_id
    if aborted:
        message = f"Slurm job {job_id} ended; its run {aborted} was aborted and the fabric is free."
    elif forgot:
        message = f"Slurm job {job_id} ended; it left no run holding the fabric."
    else:
        message = f"Slurm job {job_id} does not hold the wafer; nothing to do."
    return (None if forgot else current), {"message": message, "changed": bool(aborted or forgot),
                                           "abortedRun": aborted}
