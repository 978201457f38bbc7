"""The run requests as csd asks them (`device.runs`): what the device adds to a request of
statemachine/runs.py — the gates that are the device's (its lifecycle, its faults, the Slurm job
holding the wafer, its serial and execution mode) — and the reply the wire gets
(statemachine/run_report.py).

Each request takes the op's arguments as one record (csadmin/shared/opargs.py `Args`, built once
from the op's declaration in csadmin/shared/ops.py) and hands it down whole to statemachine/runs.py,
which reads what it uses by the names the op declares; besides it, only what the caller is
(`client`) and what csd drew (a join token's digest). A collaborator of `Device`, built with the
runs, the faults, the clock, the lifecycle it reads (`system`) and the device as a `RunHost`.
"""

from __future__ import annotations

from typing import Callable, Protocol

from csadmin.shared.opargs import Args
from csadmin.shared.states import ExecMode, Lifecycle

from .faults.injector import FaultInjector
from .faults.rules import Blocked
from .run import Run
from .run_report import holder_summary, record
from .run_rules import OPEN_RULES
from .rules import Refuse
from .runs import Runs
from .slurm_jobs import SlurmJob


class LifecycleView(Protocol):
    """What the run requests read of the system's lifecycle (statemachine/lifecycle.py)."""

    @property
    def lifecycle(self) -> Lifecycle: ...

    active_mode: ExecMode


class RunHost(Protocol):
    """What the run requests read of the device they belong to (they change none of it)."""

    serial: str
    slurm_job: SlurmJob | None


class RunRequests:
    """Run requests answered as the wire's dicts; refusals raise a `csadmin.errors` class."""

    def __init__(self, runs: Runs, faults: FaultInjector, clock: Callable[[], int], system: LifecycleView,
                 host: RunHost):
        self._runs = runs
        self._faults = faults
        self._clock = clock
        self._system = system
        self._host = host

    def record(self, run: Run) -> dict:
        return record(run, self._clock())

    # -- reads ---------------------------------------------------------------------------------

    def show(self, run_id: str) -> dict:
        """One kept run, open or ended (its performance so far while open)."""
        return self.record(self._runs.get(run_id))

    def listing(self, max_count: int | None = None) -> dict:
        """The kept runs, newest first, and the one holding the fabric."""
        return {"runs": [self.record(r) for r in self._runs.listing(max_count)], "runHolder": self.holder()}

    def holder(self) -> dict | None:
        """The run holding the fabric in brief (`runHolder`), or None."""
        return holder_summary(self._runs.holder, self._clock())

    # -- requests (csadmin/shared/ops.py declares each one's arguments) ------------------------

    def open(self, request: Args, client: str, token_digest: str | None = None) -> dict:
        """run.open: a run holding the fabric, owned by `client`; only when ACTIVE, BUSY while
        another run holds it. With `workers`, that many input workers may join it with the
        token whose digest (workers.token_digest) is `token_digest`. Returns the run's record."""
        self._faults.refuse_if_blocked(Blocked.OPEN, "no run can be opened")
        rule = OPEN_RULES[self._system.lifecycle]
        if isinstance(rule, Refuse):
            raise rule.refusal()
        job = self._host.slurm_job.job_id if self._host.slurm_job else None
        run = self._runs.open(request, client, job, token_digest)
        self._faults.run_opened(run.opened_at)
        return self.record(run)

    def join(self, request: Args, client: str) -> dict:
        """run.join: admit `client` as an input worker of the run (statemachine/workers.py): from
        now on it may stream and heartbeat, nothing else. PERMISSION_DENIED for a wrong token
        (or a run that admits no workers), BUSY once every slot is taken. Returns the run's
        record, `worker` (the name it feeds under) and `changed` (False: it had joined already)."""
        run, worker, changed = self._runs.join(request, client)
        return {**self.record(run), "worker": worker.name, "changed": changed}

    def leave(self, request: Args, client: str) -> dict:
        """run.leave: an input worker is done feeding the run: it is reported LEFT, not LOST.
        Returns the run's record, `worker` and `changed` (False: it had left already)."""
        run, worker, changed = self._runs.leave(request, client)
        return {**self.record(run), "worker": worker.name, "changed": changed}

    def program(self, request: Args, client: str, token_digest: str | None = None) -> dict:
        """run.program: program the fabric of a run, once, with a descriptor checked by
        programs.parse_program; with `workers`, the run admits input workers from now on, as with
        open(). Returns the run's record (PROGRAMMING until `programmingUntil`)."""
        if self._runs.get(request.run_id, client).is_open:  # unknown, another's, ended: those say more
            self._faults.refuse_if_blocked(Blocked.PROGRAM, "the fabric cannot be programmed")
        return self.record(self._runs.program(
            request, client, self._host.serial, self._system.active_mode, token_digest
        ))

    def stream(self, request: Args, client: str) -> dict:
        """run.stream: count samples fed to the programmed fabric by its opener (renewing the
        lease) or by one of its input workers (a hot op)."""
        run = self._runs.stream(request, client)
        return {"runId": run.run_id, "status": run.status.value, "fabric": run.fabric.value,
                "totalSamples": run.total_samples, "leaseUntil": run.lease_until}

    def heartbeat(self, request: Args, client: str) -> dict:
        """run.heartbeat: renew the run's lease, or, from an input worker, say it is alive (a hot op)."""
        run = self._runs.heartbeat(request, client)
        return {"runId": run.run_id, "status": run.status.value, "fabric": run.fabric.value,
                "leaseUntil": run.lease_until}

    def close(self, request: Args, client: str) -> dict:
        """run.close: end the run and release the fabric; with `reason` it ends ABORTED (its
        runtime gave up). Returns its record and `changed` (False: it was already closed)."""
        run, changed = self._runs.close(request, client)
        return {**self.record(run), "changed": changed}

    def abort(self, request: Args) -> dict:
        """runs.abort: abort a run whoever holds it (admins), for `reason`. Returns its record and
        `changed` (False: it was already aborted); with `dry_run`, what it would be, changing nothing."""
        run, changed = self._runs.abort(request)
        return {**self.record(run), "changed": changed, **({"dryRun": True} if request.dry_run else {})}
