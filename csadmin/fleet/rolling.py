"""A change rolled across systems: at most K at a time, stopping on the first failure unless
told to keep going, and stopping *starting* systems when interrupted while those started finish.

The caller's thread drives it (`poll`), so Ctrl-C lands there and never inside a system's
change: `stop()` only keeps new systems from starting. Each started system runs on a thread of
its own with its own client; what it says and how it ends come back through one queue.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, NamedTuple

import zmq

from .. import errors
from ..client import Client
from ..clientlib.inventory import System
from .switch import DONE, FAILED, SKIPPED, Outcome, Skip


class Progress(NamedTuple):
    system: str
    text: str


# What a system's change is: given its client and a way to report a step, it returns what it did
# (or raises Skip, or the CsError of the step that failed).
Change = Callable[[Client, Callable[[str], None]], str]


class Rolling:
    """Roll `change` over `systems` in order, at most `max_parallel` at once."""

    def __init__(self, systems: list[System], change: Change, connect: Callable[[System, zmq.Context], Client],
                 max_parallel: int = 1, keep_going: bool = False):
        self._waiting = list(systems)
        self._change, self._connect = change, connect
        self._max_parallel, self._keep_going = max(1, max_parallel), keep_going
        self._queue: queue.Queue = queue.Queue()
        self._context = zmq.Context()
        self._running: dict[str, threading.Thread] = {}
        self._outcomes: dict[str, Outcome] = {}
        self._order = [s.name for s in systems]
        self.stopped_because: str | None = None  # why no more systems are started
        self.interrupted = False

    def stop(self, reason: str = "interrupted") -> None:
        """Start no more systems; those started carry on to the end."""
        if self.stopped_because is None:
            self.stopped_because = reason
        self.interrupted = self.interrupted or reason == "interrupted"

    @property
    def running(self) -> list[str]:
        return list(self._running)

    def finished(self) -> bool:
        return not self._running and (not self._waiting or self.stopped_because is not None)

    def poll(self, timeout: float = 0.2) -> list[Progress | Outcome]:
        """Start what may start, then return what the systems said and how those that ended did
        (waiting up to `timeout` s for the first)."""
        self._start_more()
        said: list[Progress | Outcome] = []
        try:
            said.append(self._queue.get(timeout=timeout))
            while True:
                said.append(self._queue.get_nowait())
        except queue.Empty:
            pass
        for item in said:
            if isinstance(item, Outcome):
                self._running.pop(item.system).join()
                self._outcomes[item.system] = item
                if item.outcome == FAILED and not self._keep_going:
                    self.stop(f"{item.system} failed")
        self._start_more()
        return said

    def summary(self) -> list[Outcome]:
        """Every system's outcome, in the order given; those never started are skipped, saying why."""
        if not self.finished():
            raise RuntimeError("summary() before the rolling change finished")
        self._context.term()
        not_started = f"not started: {self.stopped_because}" if self.stopped_because else "not started"
        return [self._outcomes.get(name) or Outcome(name, SKIPPED, not_started) for name in self._order]

    def _start_more(self) -> None:
        while self._waiting and self.stopped_because is None and len(self._running) < self._max_parallel:
            system = self._waiting.pop(0)
            thread = threading.Thread(target=self._one, args=(system,), name=f"cs-rolling-{system.name}", daemon=True)
            self._running[system.name] = thread
            thread.start()

    def _one(self, system: System) -> None:
        started = time.monotonic()

        def say(text: str) -> None:
            self._queue.put(Progress(system.name, text))

        def ended(outcome: str, reason: str, exc: errors.CsError | None = None) -> Outcome:
            return Outcome(system.name, outcome, reason, exc.code if exc else None,
                           exc.exit_code if exc else errors.EXIT_OK, time.monotonic() - started)

        client = None
        try:
            client = self._connect(system, self._context)
            result = ended(DONE, self._change(client, say))
        except Skip as skip:
            result = ended(SKIPPED, str(skip), errors.Busy(str(skip)))
        except errors.CsError as exc:
            result = ended(FAILED, exc.message, exc)
        except zmq.ZMQError as exc:
            result = ended(FAILED, f"cannot reach {system.target}: {exc}", errors.Unreachable(str(exc)))
        except Exception as exc:  # a bug: this system failed, the others are still accounted for
            result = ended(FAILED, f"internal error: {exc!r}", errors.Internal(repr(exc)))
        finally:
            if client is not None:
                client.close()
        self._queue.put(result)
