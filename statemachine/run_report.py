"""A run as the wire and people see it (pure: a run and a time in, plain data or words out).

`record()` is what `runs show` / `run.*` replies carry, `holder_summary()` the `runHolder` of
`system.show`, `busy()` the refusal that names the run holding the fabric. The run itself is
statemachine/run.py; the book that keeps runs, statemachine/run_book.py.
"""

from __future__ import annotations

from csadmin.errors import Busy

from .performance import performance_record
from .run import Run, utc
from .workers import ACTIVE, breakdown


def record(run: Run, now: int) -> dict:
    """A run as the wire shows it, with its performance so far when still open, and its input
    workers' breakdown and report (statemachine/workers.py)."""
    d = run.to_dict()
    performance = performance_record(run, now) if run.is_open else run.performance
    if run.is_open:
        d["performance"] = performance
    d["workers"], d["inputReport"] = breakdown(run, now, int((performance or {}).get("total_time", 0) * 1000))
    return d


def holder_summary(run: Run | None, now: int) -> dict | None:
    """The run holding the fabric in brief (None: no run holds it), with how many of its input
    workers feed it now (joined, neither left nor lost)."""
    if run is None:
        return None
    feeding = sum(w.status(now, run.lease_ms) == ACTIVE for w in run.workers.values())
    return {"runId": run.run_id, "owner": run.owner, "since": run.opened_at, "mode": run.mode,
            "fabric": run.fabric.value, "slurmJob": run.slurm_job, "workers": feeding}


def busy(holder: Run, doing: str, hint: str | None = None) -> Busy:
    """BUSY: `holder` has the fabric, so `doing` cannot happen; `hint` replaces the usual next step."""
    job = f", slurm job {holder.slurm_job}" if holder.slurm_job else ""
    return Busy(
        f"The fabric is held by run {holder.run_id} (owner {holder.owner}{job}, {holder.mode}, open since "
        f"{utc(holder.opened_at)}, fabric {holder.fabric.value}); {doing}.",
        hint or f"Wait for it to close (`cs runs show {holder.run_id}`), or an admin can abort it "
                f"(`cs runs abort {holder.run_id}`).",
    )
