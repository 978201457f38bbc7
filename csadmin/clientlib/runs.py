"""A training run, as a runtime holds it: `Client.open_run()` returns one.

    with client.open_run(mode="train", owner="job-42") as run:
        run.program(program)            # once per run; waits until the fabric is PROGRAMMED
        for batch in batches:
            run.stream(len(batch))
        perf = run.close(performance_dir="out")   # writes out/performance.json

While the run is open a background thread renews its lease (`run.heartbeat` every third of the
lease) on its *own* DEALER socket (zmq sockets are not thread-safe). That socket's identity
shares the client's first 16 characters, which is the name csd knows a caller by (and the run's
owner check uses), while its full identity differs, so csd routes each socket's replies apart.

Leaving the `with` block closes the run; leaving it on an exception ends the run as ABORTED with
the exception as its reason (unless csd already aborted it: then nothing is left to do).

Input workers (`Client.join_run()`, a `WorkerRun`) feed the same run from other processes or
hosts: they stream and heartbeat, and leave when done; the opener programs and closes it, and
its close result (`run.record`, `run.input_report`) names the workers that fed below their fair
share or stopped calling.
"""

from __future__ import annotations

import json
import os
import threading

from .. import errors
from ..shared import ops
from ..shared.atomic_write import write_atomically
from ..shared.protocol import REASON_MAX_CHARS
from .follow import until

PERFORMANCE_FILE = "performance.json"


class Run:
    """An open run on csd. `id` is its run id; `record` its last known runs.show record."""

    def __init__(self, client, record: dict, heartbeat: bool = True):
        self.client = client
        self.record = record
        self.id: str = record["runId"]
        self.lease_seconds: float = record["leaseSeconds"]
        self.join_token: str | None = record.get("joinToken")  # a secret: for this run's input workers only
        self.aborted: errors.RunAborted | None = None  # what the heartbeat thread learnt, if anything
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if heartbeat:
            self._thread = threading.Thread(target=self._heartbeats, name=f"heartbeat-{self.id}", daemon=True)
            self._thread.start()

    # -- the runtime's calls -------------------------------------------------------------------

    def program(self, program: dict, wait: bool = True, timeout: float | None = None,
                workers: int | None = None) -> dict:
        """Program the fabric with a compiled artifact's descriptor (once per run). With `wait`,
        return once the fabric is PROGRAMMED (`timeout` defaults to the expected programming
        time plus the client's timeout). With `workers=N` (for a run opened without), N input
        workers may join it from now on with `self.join_token`. Raises IncompatibleProgram,
        ReprogramForbidden, ..."""
        args = {"workers": workers} if workers else {}
        record = self.client.call(ops.RUN_PROGRAM, run_id=self.id, program=program, **args)
        self.record = record
        self.join_token = record.get("joinToken", self.join_token)
        if not wait or record["fabric"] == "PROGRAMMED":
            return record
        expected = (record["programmingUntil"] - record["programmingStartedAt"]) / 1000
        return self._wait_programmed(expected + self.client.timeout if timeout is None else timeout)

    def stream(self, samples: int) -> dict:
        """Report `samples` fed since the last report (renews the lease)."""
        return self.client.call(ops.RUN_STREAM, run_id=self.id, samples=samples)

    def heartbeat(self) -> dict:
        """Renew the lease now (the background thread does this on its own)."""
        return self.client.call(ops.RUN_HEARTBEAT, run_id=self.id)

    def show(self) -> dict:
        self.record = self.client.call(ops.RUNS_SHOW, run_id=self.id)
        return self.record

    @property
    def input_report(self) -> dict | None:
        """The per-worker report of the last record (after close(): the final one): `slow` and
        `lost` name the feeders below half their fair share or silent, `message` says it for
        people; `run.record["workers"]` has each feeder's samples, samples/s and share."""
        return self.record.get("inputReport")

    def close(self, performance_dir: str | None = None, reason: str | None = None) -> dict:
        """End the run and release the fabric; return its performance record (the fields of
        performance.json), also written to `performance_dir`/performance.json when given.
        With `reason`, the run ends ABORTED (the runtime gives up)."""
        self.stop_heartbeats()
        args = {"run_id": self.id}
        if reason is not None:
            args["reason"] = shorten_reason(reason)
        self.record = self.client.call(ops.RUN_CLOSE, **args)
        performance = self.record["performance"]
        if performance_dir is not None:
            write_performance(performance_dir, performance)
        return performance

    # -- context manager -----------------------------------------------------------------------

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop_heartbeats()
        if self.record.get("status", "OPEN") != "OPEN":
            return
        if exc_type is None:
            self.close()
            return
        if isinstance(exc, errors.RunAborted):
            return  # csd ended it already
        try:
            self.close(reason=f"runtime failed: {exc_type.__name__}: {exc}")
        except errors.CsError:
            pass  # the original exception matters more; the lease frees the fabric anyway

    # -- internals -----------------------------------------------------------------------------

    def _wait_programmed(self, timeout: float) -> dict:
        def programmed() -> dict | None:
            record = self.show()
            if record["status"] != "OPEN":
                raise errors.RunAborted(
                    f"Run {self.id} ended while programming: {record.get('abortReason') or record['status']}.",
                    "Open a new run and program it.",
                )
            return record if record["fabric"] == "PROGRAMMED" else None

        def timed_out() -> errors.CsError:
            return errors.Unreachable(
                f"Run {self.id}'s fabric was not programmed within {timeout:g} s.",
                f"Check `cs runs show {self.id}`; pass a longer timeout for large programs.",
            )

        return until(self.client, programmed, timeout, timed_out)

    def _heartbeats(self) -> None:
        interval = max(0.05, self.lease_seconds / 3)
        beat = self.client.sibling(timeout=max(0.1, min(self.client.timeout, self.lease_seconds)), retries=1)
        try:
            while not self._stop.wait(interval):
                try:
                    beat.call(ops.RUN_HEARTBEAT, run_id=self.id)
                except errors.RunAborted as exc:
                    self.aborted = exc
                    return
                except errors.InvalidState:
                    return  # closed
                except errors.CsError:
                    continue  # a slow or lost answer: try again at the next beat
        finally:
            beat.close()

    @property
    def heartbeating(self) -> bool:
        """Whether a background thread still renews this run's lease."""
        return self._thread is not None

    def stop_heartbeats(self) -> None:
        """Stop renewing the lease (close() and leaving the `with` block do; so does closing the client)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=max(1.0, self.client.timeout))
            self._thread = None


class WorkerRun(Run):
    """A run as one of its input workers holds it (`Client.join_run()`): it streams and
    heartbeats; leaving the `with` block leaves the run (run.leave), and on an exception just
    stops feeding (csd reports the worker LOST once the run's lease passes without a call).
    program() and close() are the opener's: csd refuses them (PERMISSION_DENIED)."""

    def __init__(self, client, record: dict, heartbeat: bool = True):
        self.worker: str = record["worker"]  # the name this worker feeds under
        super().__init__(client, record, heartbeat)

    def close(self, performance_dir: str | None = None, reason: str | None = None) -> dict:
        """Refused by csd (the opener closes the run); the heartbeats carry on."""
        return self.client.call(ops.RUN_CLOSE, run_id=self.id, **({"reason": shorten_reason(reason)} if reason else {}))

    def leave(self) -> dict:
        """Say this worker is done feeding the run (reported LEFT, not LOST); stops heartbeats."""
        self.stop_heartbeats()
        self.record = self.client.call(ops.RUN_LEAVE, run_id=self.id)
        return self.record

    def __exit__(self, exc_type, exc, tb) -> None:
        self.stop_heartbeats()
        if exc_type is None:
            try:
                self.leave()
            except (errors.RunAborted, errors.InvalidState):
                pass  # the run ended first: nothing left to leave


def shorten_reason(text: str) -> str:
    """A reason csd accepts: printable, one line, at most REASON_MAX_CHARS characters, cut at a
    word (with an ellipsis) rather than mid-word when it must be cut."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in text).split()) or "no reason given"
    if len(text) <= REASON_MAX_CHARS:
        return text
    cut = text[: REASON_MAX_CHARS - 1].rsplit(" ", 1)[0]
    return cut + "…"


def write_performance(directory: str, performance: dict) -> str:
    """Write `performance` as `directory`/performance.json, atomically and durably (fsynced, like
    every file csadmin writes: csadmin/shared/atomic_write.py); return the path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, PERFORMANCE_FILE)
    write_atomically(path, json.dumps(performance, indent=2, sort_keys=True) + "\n")
    return path
