"""The Python client of csd, for training runtimes, scripts and the `cs` console.

    from csadmin.client import Client
    with Client() as cs:
        cs.system_show()["state"]
        cs.wait_for(state="ACTIVE", execmode="WEIGHT_STREAMING", timeout=120)
        with cs.open_run(mode="train", owner="job-42") as run:   # csadmin/clientlib/runs.py
            run.program(program)
            run.stream(256)
            perf = run.close(performance_dir=".")

One method per csd operation, each calling the op's declaration (csadmin/shared/ops.py:
`system_standby` sends `ops.SYSTEM_STANDBY`; its module in daemon/commands/ documents it), plus
waiting and following events (csadmin/clientlib/follow.py). An op without a method here is still one
call away: `cs.call(ops.META_WHOAMI)`. How requests travel, time out and are retried is csadmin/clientlib/transport.py's;
errors raise the class of their code from `csadmin.errors`. Importing this module loads only
pyzmq and the stdlib.
"""

from __future__ import annotations

import functools

import zmq

from . import errors
from .clientlib.follow import EventStream, until
from .clientlib.transport import Transport
from .shared import connection, ops


# The events that say a transition toward a state failed (csd keeps the fault that caused it
# active until the next such transition succeeds).
FAILED_TOWARD = {"ACTIVE": ("EventActivateFailed", "EventActivateTimedout"),
                 "STANDBY": ("EventStandbyFailed", "EventStandbyTimedout")}


def _raise_if_failed(snap: dict, state: str | None) -> None:
    """Raise TransitionFailed if the system settled short of `state` because its transition failed."""
    if state not in FAILED_TOWARD or snap["state"] == state or snap["state"].startswith("PENDING_"):
        return
    for fault in snap.get("activeFaults") or ():
        if fault.get("status") == "active" and fault.get("event") in FAILED_TOWARD[state]:
            raise errors.TransitionFailed(
                f"The system did not reach {state}: {fault['summary']} ({fault['event']}, injected fault "
                f"{fault['name']}); it is {snap['state']}, health {snap['systemHealth']}.",
                f"Retry, or clear the fault first (`cs system fault clear {fault['name']}`).",
                fault=fault["name"],
            )


def _given(**args) -> dict:
    """The arguments a caller gave (None: left out, so csd applies its default)."""
    return {k: v for k, v in args.items() if v is not None}


class Client(Transport):
    """A connection to csd and its operations: one method per csd operation, waiting and
    following events, and runs (`open_run`, `join_run`). A context manager; `close()` ends it.

        with Client() as cs:                                  # $CS_CONNECT / $CS_KEY, or the defaults
        with Client(connect="/run/csd/csd.json", key="~/.config/cs/client.key_secret") as cs:
        with Client("tcp://cs2-mgmt:9000", server_key="…", key="worker.key_secret") as cs:

    Errors raise the class of their code from `csadmin.errors` (Busy, PermissionDenied, …)."""

    @functools.wraps(Transport.__init__)  # so help(Client) and signature(Client) show its real arguments
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._runs: list = []  # open runs whose heartbeats stop when this client closes

    def close(self) -> None:
        """Stop the runs' heartbeats and close this client's sockets (it never blocks)."""
        for run in self._runs:
            run.stop_heartbeats()
        self._runs = []
        super().close()

    # -- operations ----------------------------------------------------------------------------

    def hello(self) -> dict:
        """Protocol version, serial, events endpoint and event types of the daemon."""
        result = self.call(ops.META_HELLO)
        if self._events_endpoint is None:  # a connection file already says where
            self._events_endpoint = connection.events_endpoint_for(self.endpoint, result)
        return result

    def whoami(self) -> dict:
        """{name, role, session}: the key this client uses and this connection, as csd sees them."""
        return self.call(ops.META_WHOAMI)

    def audit_show(self, max_count: int | None = None) -> list[dict]:
        """The newest audit records, oldest first (admins only)."""
        return self.call(ops.AUDIT_SHOW, **_given(max_count=max_count))["entries"]

    def system_show(self, detailed: bool = False) -> dict:
        """The system's state, health and modes (with `detailed`, csd's version and timings)."""
        return self.call(ops.SYSTEM_SHOW, **_given(detailed=detailed or None))

    def system_date(self) -> dict:
        """{time (ms since the epoch), iso (UTC)}: the system's clock."""
        return self.call(ops.SYSTEM_DATE)

    def system_standby(self, force: bool = False, dry_run: bool = False) -> dict:
        """Start ACTIVE → STANDBY. With `force`, abort the run holding the fabric; with
        `dry_run`, only check (the refusal, or `changed` saying whether it would act)."""
        return self.call(ops.SYSTEM_STANDBY, **_given(force=force or None, dry_run=dry_run or None))

    def system_activate(self, dry_run: bool = False) -> dict:
        """Start STANDBY → ACTIVE in the configured execution mode (admins); with `dry_run`,
        only check. Wait for it with `wait_for(state="ACTIVE")`."""
        return self.call(ops.SYSTEM_ACTIVATE, **_given(dry_run=dry_run or None))

    def fault_inject(self, name: str, for_seconds: float | None = None, after_seconds: float | None = None,
                     dry_run: bool = False) -> dict:
        """Inject a simulated fault (admins; daemon/commands/system_fault_inject.py)."""
        return self.call(ops.SYSTEM_FAULT_INJECT, name=name, **_given(
            for_seconds=for_seconds, after_seconds=after_seconds, dry_run=dry_run or None))

    def fault_clear(self, name: str | None = None, all: bool = False, dry_run: bool = False) -> dict:
        """Clear the fault `name`, or every fault with `all=True` (admins)."""
        return self.call(ops.SYSTEM_FAULT_CLEAR, **_given(name=name, all=all or None, dry_run=dry_run or None))

    def fault_list(self) -> dict:
        """{faults (present), catalogue, systemHealth, scenario}."""
        return self.call(ops.SYSTEM_FAULT_LIST)

    def fault_scenario(self, text: str, source: str | None = None, dry_run: bool = False) -> dict:
        """Load a fault scenario from its TOML text (admins; statemachine/faults/scenario.py)."""
        return self.call(ops.SYSTEM_FAULT_SCENARIO, text=text, **_given(source=source, dry_run=dry_run or None))

    def execmode_show(self) -> dict:
        """{execmode (configured), activeExecmode, takesEffectOnActivate}."""
        return self.call(ops.CONFIG_EXECMODE_SHOW)

    def execmode_setup(self, mode: str, dry_run: bool = False) -> dict:
        """Configure the mode the next activation boots into, PIPELINED or WEIGHT_STREAMING
        (admins, STANDBY only: InvalidState otherwise)."""
        return self.call(ops.CONFIG_EXECMODE_SETUP, mode=mode, **_given(dry_run=dry_run or None))

    def open_run(self, mode: str = "train", owner: str | None = None, lease_seconds: float | None = None,
                 heartbeat: bool = True, **args):
        """Open a run holding the fabric; returns a `csadmin.clientlib.runs.Run` (a context
        manager) that renews its lease in the background while open (unless `heartbeat=False`).
        `args` are run.open's other arguments, as its declaration names them
        (csadmin/shared/ops.py RUN_OPEN; None leaves one out): `workers=N` lets N input workers
        join it (hand them `run.id` and `run.join_token`, a secret, for `join_run`); `model_dir`
        (the runtime's artifact directory) shows in runs.show. Raises Busy (naming the holder),
        InvalidState (not ACTIVE), InvalidArgument; TypeError for an argument run.open does not take."""
        from .clientlib.runs import Run  # threading and json only load for runtimes

        unknown = sorted(set(args) - set(ops.RUN_OPEN.args))
        if unknown:
            raise TypeError(f"open_run() got argument(s) run.open does not take: {', '.join(unknown)} "
                            f"(it takes: {', '.join(ops.RUN_OPEN.args)}, heartbeat)")
        record = self.call(ops.RUN_OPEN, mode=mode, **_given(owner=owner, lease_seconds=lease_seconds, **args))
        return self._keep(Run(self, record, heartbeat=heartbeat))

    def join_run(self, run_id: str, token: str, name: str | None = None, heartbeat: bool = True):
        """Join an open run as one of its input workers, with the join token its opener got;
        returns a `csadmin.clientlib.runs.WorkerRun` (a context manager: `stream()` into the run, and
        `leave()` when done, which leaving the `with` block does). A background thread says the
        worker is alive while it feeds (unless `heartbeat=False`). Program, close and abort
        stay with the opener. Raises PermissionDenied (wrong token), Busy (every slot taken),
        RunAborted, InvalidState (closed), NotFound."""
        from .clientlib.runs import WorkerRun

        record = self.call(ops.RUN_JOIN, run_id=run_id, token=token, **_given(name=name))
        return self._keep(WorkerRun(self, record, heartbeat=heartbeat))

    def _keep(self, run):
        """Track `run` so that closing the client stops its heartbeat thread."""
        self._runs = [r for r in self._runs if r.heartbeating] + [run]
        return run

    def runs_list(self, max_count: int | None = None) -> dict:
        """{runs: [...newest first], runHolder: null or {runId, owner, since, mode, fabric}}."""
        return self.call(ops.RUNS_LIST, **_given(max_count=max_count))

    def runs_show(self, run_id: str) -> dict:
        """One run: owner, state, lease, program, performance and input workers (NotFound if unknown)."""
        return self.call(ops.RUNS_SHOW, run_id=run_id)

    def runs_abort(self, run_id: str, reason: str | None = None, dry_run: bool = False) -> dict:
        """Abort a run and release the fabric (admins); its runtime gets RunAborted with `reason`."""
        return self.call(ops.RUNS_ABORT, run_id=run_id, **_given(reason=reason or None, dry_run=dry_run or None))

    def events_show(
        self, event_type: str | None = None, from_time: int | None = None, max_count: int | None = None
    ) -> list[dict]:
        """Kept events, oldest first: those whose type matches the glob `event_type`, at or after
        `from_time` (ms), the newest `max_count`."""
        return self.call(ops.EVENTS_SHOW, **_given(event_type=event_type, from_time=from_time, max_count=max_count))["events"]

    def events_after(self, seq: int) -> list[dict]:
        """The kept events after `seq`, oldest first."""
        return self.call(ops.EVENTS_SHOW, after_seq=seq)["events"]

    def slurm_job_begin(self, job_id: str, user: str) -> dict:
        """Slurm gave the wafer to `job_id` (its prolog's call; admins)."""
        return self.call(ops.SLURM_JOB_BEGIN, job_id=job_id, user=user)

    def slurm_job_end(self, job_id: str) -> dict:
        """Slurm job `job_id` ended (its epilog's call; admins)."""
        return self.call(ops.SLURM_JOB_END, job_id=job_id)

    # -- events and waiting --------------------------------------------------------------------

    def events_endpoint(self) -> str:
        """Where csd publishes its events (from the connection file, else asked of csd)."""
        if self._events_endpoint is None:
            self.hello()
        return self._events_endpoint

    def subscribe(self, prefix: str = "") -> zmq.Socket:
        """A SUB socket on the daemon's events; frames are [type, json]. Caller closes it.
        (It may miss events: follow() is the way to miss none.)"""
        return self.new_socket(zmq.SUB, self.events_endpoint(), SUBSCRIBE=prefix.encode())

    def follow(self, after_seq: int | None = None) -> EventStream:
        """csd's events after `after_seq` (default: from now on), none skipped: `next(timeout)`
        returns the new ones. Close it (or use it as a context manager)."""
        return EventStream(self, after_seq)

    def wait_for(self, state: str | None = None, execmode: str | None = None, timeout: float = 60.0,
                 on_progress=None, health=None) -> dict:
        """Block until the system is in `state` (and runs in `execmode`, and its systemHealth is
        `health`: one value, or a collection of them, e.g. {"OK", "DEGRADED"}); return
        `system.show`. Woken by csd's events, with a fresh snapshot after each (and at least
        every half second); `on_progress(snapshot)` sees each. Raises TransitionFailed when the
        transition to `state` failed or timed out (an injected fault: `.fault` names it), and
        Unreachable on timeout."""
        last: dict = {}
        healths = None if health is None else {health} if isinstance(health, str) else set(health)

        def reached() -> dict | None:
            snap = last["snap"] = self.system_show()
            if on_progress is not None:
                on_progress(snap)
            if (state is None or snap["state"] == state) and (execmode is None or snap["activeExecmode"] == execmode) \
                    and (healths is None or snap["systemHealth"] in healths):
                return snap
            _raise_if_failed(snap, state)
            return None

        def timed_out() -> errors.CsError:
            want = " and ".join(x for x in (state, execmode, healths and "health " + "/".join(sorted(healths))) if x)
            snap = last["snap"]
            return errors.Unreachable(
                f"The system did not reach {want} within {timeout:g} s (it is {snap['state']}, "
                f"health {snap['systemHealth']}).",
                "Check `cs system show` and `cs events show`; raise --timeout if it is still changing.",
            )

        return until(self, reached, timeout, timed_out)
