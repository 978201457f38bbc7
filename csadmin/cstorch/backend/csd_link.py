"""The process's connection to csd and its one run there, as cstorch drives them.

    csd.check_system("WEIGHT_STREAMING")        # cstorch.compile: reachable, ACTIVE, that mode
    csd.open("train", descriptor, run_dir)      # the first step: run.open, run.program (waits)
    csd.step_done(samples)                      # every step: no csd round trip most steps
    csd.close()                                 # run.close, performance.json (below)
    csd.shutdown()                              # the backend's end: the client's sockets

One link serves the backend's runs in turn: each `open` starts a run afresh (its counters, its
abort), and `close` ends that run only. The run's directory is given at open: csd records it,
and performance.json lands in `<run_dir>/performance/` (the first release's model directory),
or in `<run_dir>/` itself with `flat=True` (a DataExecutor's artifact directory, as the later
releases put it).

Steps report their samples in batches: `run.stream` once at least STREAM_EVERY_STEPS steps and
STREAM_EVERY_SECONDS have passed since the last (or STREAM_AT_LEAST_EVERY seconds, for slow
steps), and the rest at the close. A fast loop thus costs csd one round trip a second, a slow one
one per ten steps at most — each is a wait for csd to be scheduled, which on a busy host is
milliseconds. The client's heartbeat thread keeps the lease meanwhile. A csd-side abort (standby --force, a
critical fault, `runs abort`) is noticed without asking csd: the link subscribes to
EventTrainingAborted and checks that socket (ZMQ_EVENTS, no wait) at every step, and the heartbeat
thread and the next stream are two more ways to learn it. The next step then raises RunAborted
with csd's reason.
"""

from __future__ import annotations

import json
import os
import time

import zmq

from csadmin import errors
from csadmin.client import Client

from .config import Config

STREAM_EVERY_STEPS = 10
STREAM_EVERY_SECONDS = 1.0
STREAM_AT_LEAST_EVERY = 5.0
CLIENT_TIMEOUT = 5.0
ABORT_EVENT = "EventTrainingAborted"


def csd_client(address: str | None, key: str | None, timeout: float = CLIENT_TIMEOUT) -> Client:
    """A client for csd at `address` (a connection file or an endpoint), as cstorch.configure takes
    it (the training process's link, and each input worker's own)."""
    endpoint = address if address and "://" in address else None
    connect = None if endpoint or not address else address
    return Client(endpoint, timeout=timeout, connect=connect, key=key)


def aborted_error(run_id: str, reason: str, fault: str | None = None) -> errors.RunAborted:
    return errors.RunAborted(
        f"Run {run_id} was aborted on the system: {reason}.",
        "The fabric is no longer programmed for this process (one run per process): start the script "
        "again, resuming from its last checkpoint.", fault=fault)


class CsdLink:
    """csd as this process's cstorch sees it. `round_trips` counts the requests steps made."""

    def __init__(self, config: Config):
        self.config = config
        address = config.mgmt_address
        self.client = csd_client(config.mgmt_address, config.key, CLIENT_TIMEOUT)
        self.run = None
        self.run_ids: list[str] = []  # every run opened, oldest first (a workflow's execute jobs: cluster.py)
        self.serial: str | None = None
        self.aborted: errors.RunAborted | None = None
        self.performance: dict | None = None
        self.round_trips = 0
        self._events: zmq.Socket | None = None
        self._samples = 0  # fed since the last run.stream
        self._steps = 0
        self._last_stream = time.monotonic()
        self._performance_dir: str | None = None  # where the open run's performance.json goes

    # -- before the run ------------------------------------------------------------------------

    def check_system(self, execmode: str, backend: str, backends: dict) -> dict:
        """Raise unless csd answers, the system is ACTIVE and runs in `execmode`."""
        snap = self.client.system_show()
        if snap["state"] != "ACTIVE":
            raise errors.InvalidState(
                f"The system {snap['serial']} is {snap['state']} (health {snap['systemHealth']}), not ACTIVE: "
                f"a model cannot be compiled for it to run.",
                "Ask an admin to activate it (`cs system activate`), then start the script again.")
        if snap["activeExecmode"] != execmode:
            raise errors.IncompatibleProgram(
                f"backend={backend!r} compiles for {execmode}, but the system runs in {snap['activeExecmode']}.",
                f"Use {_backend_for(snap['activeExecmode'], backends)}, or ask an admin to switch the execution mode "
                f"(`config execmode setup`, then `system activate`).")
        self.serial = snap["serial"]
        return snap

    def open(self, mode: str, program: dict, run_dir: str | None = None, flat: bool = False) -> None:
        """Open a run and program the fabric with `program` (waits until PROGRAMMED). `run_dir`
        (default: the model directory) is the run's directory (see the module docstring)."""
        owner = "cstorch " + os.path.basename(os.path.abspath(os.sys.argv[0] or "python"))
        workers = self.config.num_workers_per_csx
        run_dir = os.path.abspath(run_dir or self.config.model_dir)
        self._performance_dir = run_dir if flat else os.path.join(run_dir, "performance")
        self.aborted, self.performance, self._samples, self._steps = None, None, 0, 0
        self.run = self.client.open_run(mode=mode, owner=owner[:60], model_dir=run_dir,
                                        workers=workers if self.config.fed_by_workers else None,
                                        time_limit_seconds=self.config.job_time_sec)  # csd aborts the run past it
        self.run_ids.append(self.run.id)
        self._events = self.client.subscribe(ABORT_EVENT)
        try:
            self.run.program(program)
        except BaseException as exc:  # refused, or Ctrl-C while programming: end this run now
            run, self.run = self.run, None
            self._events.close()
            self._events = None
            if run.record.get("status", "OPEN") == "OPEN" and not isinstance(exc, errors.RunAborted):
                try:
                    run.close(reason=f"programming failed: {type(exc).__name__}: {exc}")
                except errors.CsError:
                    run.stop_heartbeats()  # its lease frees the fabric
            raise
        self._last_stream = time.monotonic()

    # -- while stepping ------------------------------------------------------------------------

    def check(self) -> None:
        """Raise RunAborted if csd ended the run (as far as this process knows, without asking)."""
        if self.aborted is None and self.run is not None:
            if self.run.aborted is not None:  # the heartbeat thread heard it
                self.aborted = self.run.aborted
            elif self._events is not None and self._events.get(zmq.EVENTS) & zmq.POLLIN:
                self._read_events()  # (ZMQ_EVENTS: ~1 µs; a zmq.Poller costs ~100× that per step)
        if self.aborted is not None:
            raise self.aborted

    def _read_events(self) -> None:
        while self._events.get(zmq.EVENTS) & zmq.POLLIN:
            frames = self._events.recv_multipart()
            try:
                details = json.loads(frames[-1])["details"]
            except (ValueError, KeyError, TypeError):
                continue
            if details.get("runId") == self.run.id:
                self.aborted = aborted_error(self.run.id, details.get("reason") or "aborted", details.get("fault"))
                self.run.record["status"] = "ABORTED"

    def step_done(self, samples: int) -> None:
        """Count one executed step of `samples`; report them to csd when a batch is due. With
        input workers they report the samples (each what it fed): this process only counts steps."""
        self._samples += 0 if self.config.fed_by_workers else samples
        self._steps += 1
        waited = time.monotonic() - self._last_stream
        if (self._steps >= STREAM_EVERY_STEPS and waited >= STREAM_EVERY_SECONDS) or waited >= STREAM_AT_LEAST_EVERY:
            self.flush()

    def flush(self) -> None:
        if self.run is None or not self._steps:
            return
        samples, self._samples, self._steps = self._samples, 0, 0
        if not samples:
            self._last_stream = time.monotonic()
            return  # the input workers stream
        self._last_stream = time.monotonic()
        self.round_trips += 1
        try:
            self.run.stream(samples)
        except errors.RunAborted as exc:
            self.aborted = aborted_error(self.run.id, _reason(exc.message), exc.fault)
            self.run.record["status"] = "ABORTED"
            raise self.aborted from None

    # -- the end -------------------------------------------------------------------------------

    @property
    def open_run(self) -> bool:
        return self.run is not None and self.run.record.get("status", "OPEN") == "OPEN" and self.aborted is None

    def close(self, reason: str | None = None) -> dict | None:
        """Report the samples not yet reported, close the run (ABORTED with `reason`: an
        interrupted run still counts what it fed), write performance.json."""
        if self.open_run:
            try:
                self.flush()
            except errors.RunAborted:
                pass  # nothing left to close
        return self._end(reason)

    def _end(self, reason: str | None) -> dict | None:
        try:
            if self.open_run:
                self.performance = self.run.close(performance_dir=self._performance_dir, reason=reason)
        finally:
            if self._events is not None:
                self._events.close()
                self._events = None
        return self.performance

    def shutdown(self) -> None:
        """Close the client (its sockets): the backend is done with csd."""
        self.client.close()


def _backend_for(execmode: str, backends: dict) -> str:
    names = [repr(name) for name, mode in backends.items() if mode == execmode]
    return f"backend={names[0]}" if names else f"a backend for {execmode}"


def _reason(message: str) -> str:
    """csd's RunAborted message without its 'Run X was aborted: ' preamble, if it has one."""
    head, sep, tail = message.partition(": ")
    return tail.rstrip(".") if sep and "abort" in head else message.rstrip(".")
