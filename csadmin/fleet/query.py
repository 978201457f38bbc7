"""Ask every system for `system.show` at once, each within its own deadline.

One thread per system, each with its own socket on one shared ZeroMQ context: the answers come
back as fast as the slowest system that answers, and a system that is down or frozen costs its
deadline once, however many there are (a csd that is stopped costs nothing: its connection file
or socket is gone, which is known at once).
"""

from __future__ import annotations

import threading
import time
from typing import NamedTuple

import zmq

from .. import errors
from ..inventory import System
from .connect import client_for

GRACE_SECONDS = 1.0  # past the deadline, for a thread that is ending its call, before it is given up


class Answer(NamedTuple):
    """One system's answer: its snapshot and round trip (ms), or the error that stood instead."""

    system: System
    snapshot: dict | None = None
    rtt_ms: float | None = None
    error: errors.CsError | None = None

    @property
    def reachable(self) -> bool:
        return self.snapshot is not None


def show_all(systems: list[System], deadline: float, default_key: str | None = None) -> list[Answer]:
    """`system.show` of each of `systems`, in their order. Never raises for one system: its
    Answer carries the error (Unreachable past `deadline` seconds)."""
    context = zmq.Context()
    answers: list[Answer | None] = [None] * len(systems)

    def ask(i: int, system: System) -> None:
        client = None
        try:
            client = client_for(system, timeout=deadline, retries=0, context=context, default_key=default_key)
            started = time.monotonic()
            snapshot = client.system_show()
            answers[i] = Answer(system, snapshot, (time.monotonic() - started) * 1000)
        except errors.CsError as exc:
            answers[i] = Answer(system, error=exc)
        except zmq.ZMQError as exc:  # e.g. an endpoint ZeroMQ cannot parse
            answers[i] = Answer(system, error=errors.Unreachable(f"Cannot reach {system.target}: {exc}."))
        finally:
            if client is not None:
                client.close()

    threads = [threading.Thread(target=ask, args=(i, s), name=f"cs-fleet-{s.name}", daemon=True)
               for i, s in enumerate(systems)]
    for thread in threads:
        thread.start()
    end = time.monotonic() + deadline + GRACE_SECONDS
    for thread in threads:
        thread.join(max(0.0, end - time.monotonic()))
    late = any(thread.is_alive() for thread in threads)
    if not late:
        context.term()
    # A thread still in its call keeps the context (closing it under the thread would break its
    # socket mid-call); it ends within its own timeout and the process's exit reclaims it.
    return [a or Answer(s, error=errors.Unreachable(f"{s.name} did not answer within {deadline:g} s."))
            for a, s in zip(answers, systems)]
