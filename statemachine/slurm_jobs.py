"""The Slurm job the wafer is allocated to (docs/slurm.md).

On a Slurm node the CS-2 is a GRES of count 1, so Slurm gives it to one job at a time. The job's
prolog tells csd which job that is (`slurm.job.begin`); runs opened from then on carry the job's
id, and its epilog (`slurm.job.end`) aborts whatever run the job left holding the fabric. csd
records what Slurm says and does not ask Slurm itself. The rules live in Device.begin_slurm_job
and Device.end_slurm_job; this module holds the record (pure); a job id is checked as an op's
argument (csadmin/opargs.py, job_id).
"""

from __future__ import annotations

from dataclasses import dataclass



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
