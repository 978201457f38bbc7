"""The device's run requests: what the device adds to a request of statemachine/runs.py — the
gates that are the device's (its lifecycle, its faults, the Slurm job holding the wafer, its
serial and execution mode) — and the reply the wire gets (statemachine/run_report.py).

A collaborator of `Device`, which keeps the door (each of its run methods hands over to one here).
It knows the device only as a `RunHost`, and the runs and faults through their own methods.
"""

from __future__ import annotations

from typing import Callable, Protocol

from csadmin.shared.states import ExecMode, Lifecycle

from .faults.injector import FaultInjector
from .faults.rules import Blocked
from csadmin.shared.programs import RunMode
from .rules import Refuse
from .run import Run
from .run_report import holder_summary, record
from .run_rules import OPEN_RULES
from .runs import Runs
from .slurm_jobs import SlurmJob


class RunHost(Protocol):
    """What the run requests read of the device they belong to (they change none of it)."""

    @property
    def lifecycle(self) -> Lifecycle: ...

    @property
    def serial(self) -> str: ...

    @property
    def active_mode(self) -> ExecMode: ...

    @property
    def slurm_job(self) -> SlurmJob | None: ...


class DeviceRuns:
    """Run requests answered as the wire's dicts; refusals raise a `csadmin.errors` class."""

    def __init__(self, runs: Runs, faults: FaultInjector, clock: Callable[[], int], host: RunHost):
        self._runs = runs
        self._faults = faults
        self._clock = clock
        self._host = host

    def record(self, run: Run) -> dict:
        return record(run, self._clock())

    def show(self, run_id: str) -> dict:
        """One kept run, open or ended (its performance so far while open)."""
        return self.record(self._runs.get(run_id))

    def listing(self, max_count: int | None = None) -> dict:
        """The kept runs, newest first, and the one holding the fabric."""
        return {"runs": [self.record(r) for r in self._runs.listing(max_count)], "runHolder": self.holder()}

    def holder(self) -> dict | None:
        """The run holding the fabric in brief (`runHolder`), or None."""
        return holder_summary(self._runs.holder, self._clock())

    def open(
        self, owner: str, client: str, mode: RunMode, lease_ms: int | None = None, worker_slots: int = 0,
        token_digest: str | None = None, model_dir: str | None = None,
    ) -> dict:
        """Open a run holding the fabric, owned by `client`; only when ACTIVE, BUSY while
        another run holds it. With `worker_slots`, that many input workers may join it with the
        token whose digest (workers.token_digest) is `token_digest`; `model_dir` is the
        runtime's artifact directory, kept for people. Returns the run's record."""
        self._faults.refuse_if_blocked(Blocked.OPEN, "no run can be opened")
        rule = OPEN_RULES[self._host.lifecycle]
        if isinstance(rule, Refuse):
            raise rule.refusal()
        job = self._host.slurm_job.job_id if self._host.slurm_job else None
        run = self._runs.open(owner, client, mode, lease_ms, job, worker_slots, token_digest, model_dir)
        self._faults.run_opened(run.opened_at)
        return self.record(run)

    def join(self, run_id: str, client: str, token: str, name: str | None = None) -> dict:
        """Admit `client` as an input worker of the run (statemachine/workers.py): from now on it
        may stream and heartbeat, nothing else. PERMISSION_DENIED for a wrong token (or a run
        that admits no workers), BUSY once every slot is taken. Returns the run's record,
        `worker` (the name it feeds under) and `changed` (False: it had joined already)."""
        run, worker, changed = self._runs.join(run_id, client, token, name)
        return {**self.record(run), "worker": worker.name, "changed": changed}

    def leave(self, run_id: str, client: str) -> dict:
        """An input worker is done feeding the run: it is reported LEFT, not LOST. Returns the
        run's record, `worker` and `changed` (False: it had left already)."""
        run, worker, changed = self._runs.leave(run_id, client)
        return {**self.record(run), "worker": worker.name, "changed": changed}

    def program(
        self, run_id: str, client: str, program: dict, worker_slots: int = 0, token_digest: str | None = None
    ) -> dict:
        """Program the fabric of a run, once, with a descriptor checked by programs.parse_program;
        with `worker_slots`, the run admits input workers from now on, as with open().
        Returns the run's record (PROGRAMMING until `programmingUntil`)."""
        if self._runs.get(run_id, client).is_open:  # unknown, another's, ended: those say more
            self._faults.refuse_if_blocked(Blocked.PROGRAM, "the fabric cannot be programmed")
        return self.record(self._runs.program(
            run_id, client, program, self._host.serial, self._host.active_mode, worker_slots, token_digest
        ))

    def stream(self, run_id: str, client: str, samples: int) -> dict:
        """Count samples fed to the programmed fabric by its opener (renewing the lease) or by
        one of its input workers (a hot op)."""
        run = self._runs.stream(run_id, client, samples)
        return {"runId": run.run_id, "status": run.status.value, "fabric": run.fabric.value,
                "totalSamples": run.total_samples, "leaseUntil": run.lease_until}

    def heartbeat(self, run_id: str, client: str) -> dict:
        """Renew the run's lease, or, from an input worker, say it is alive (a hot op)."""
        run = self._runs.heartbeat(run_id, client)
        return {"runId": run.run_id, "status": run.status.value, "fabric": run.fabric.value,
                "leaseUntil": run.lease_until}

    def close(self, run_id: str, client: str, reason: str | None = None) -> dict:
        """End the run and release the fabric; with `reason` it ends ABORTED (its runtime gave
        up). Returns its record and `changed` (False: it was already closed)."""
        run, changed = self._runs.close(run_id, client, reason)
        return {**self.record(run), "changed": changed}

    def abort(self, run_id: str, reason: str, dry_run: bool = False) -> dict:
        """Abort a run whoever holds it (admins). Returns its record and `changed` (False: it
        was already aborted); with `dry_run`, what it would be, changing nothing."""
        run, changed = self._runs.abort(run_id, reason, dry_run=dry_run)
        return {**self.record(run), "changed": changed, **({"dryRun": True} if dry_run else {})}
