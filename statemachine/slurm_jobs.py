"""The Slurm job the wafer is allocated to (docs/slurm.md).

On a Slurm node the CS-2 is a GRES of count 1, so Slurm gives it to one job at a time. The job's
prolog tells csd which job that is (`slurm.job.begin`); runs opened from then on carry the job's
id, and its epilog (`slurm.job.end`) aborts whatever run the job left holding the fabric. csd
records what Slurm says and does not ask Slurm itself. The rules live in Device.begin_slurm_job
and Device.end_slurm_job; this module holds the record and the checks of its inputs (pure).
"""

from __future__ import annotations

from dataclasses import dataclass

from .programs import quoted

_JOB_ID_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.+-")


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


def parse_job_id(value: str) -> str:
    """A Slurm job id as its scripts see it: `42`, an array task `42_7`, a het component `42+1`."""
    text = value.strip()
    if not text or len(text) > 64 or not set(text) <= _JOB_ID_CHARS:
        raise ValueError(f"must be a Slurm job id such as 42 or 42_7 (1 to 64 letters, digits, _ . + -), not {quoted(value)}")
    return text


def ended_reason(job_id: str) -> str:
    """Why a run its job left behind was aborted, as its runtime and `runs show` report it."""
    return f"slurm job {job_id} ended"
