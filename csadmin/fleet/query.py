"""Ask every system for `system.show` at once, each within its own deadline.

One thread, one `zmq.Poller` over every system's request socket (and its handshake monitor,
so a refused key shows at once): every request is sent before any answer is awaited, so the
answers come back as fast as the slowest system that answers, and a system that is down or
frozen costs the deadline once, however many there are (a stopped csd costs nothing: its
connection file or socket is gone, which is known before anything is sent). No thread per system:
on a busy host their start-up and hand-overs cost more than the answers.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import zmq

from .. import errors
from ..clientlib.inventory import System
from ..shared import ops
from .connect import client_for


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
    clients = []
    waiting = {}  # index -> (client, request id, when it was sent)
    try:
        for i, system in enumerate(systems):
            try:
                client = client_for(system, timeout=deadline, retries=0, context=context, default_key=default_key)
                clients.append(client)
                waiting[i] = (client, client.send(ops.SYSTEM_SHOW), time.monotonic())
            except errors.CsError as exc:
                answers[i] = Answer(system, error=exc)
            except zmq.ZMQError as exc:  # e.g. an endpoint ZeroMQ cannot parse
                answers[i] = Answer(system, error=errors.Unreachable(f"Cannot reach {system.target}: {exc}."))
        end = time.monotonic() + deadline
        while waiting and (remaining := end - time.monotonic()) > 0:
            poller, owner = zmq.Poller(), {}
            for i, (client, _, _) in waiting.items():
                for sock in client.pollable():
                    poller.register(sock, zmq.POLLIN)
                    owner[sock] = i
            # Only the clients with something to read are asked: asking every waiting client
            # after each answer costs quadratically in the number of systems.
            ready = {owner[sock] for sock, _ in poller.poll(max(1, int(remaining * 1000)))}
            for i in sorted(ready):
                client, request_id, sent = waiting[i]
                try:
                    snapshot = client.reply(request_id)
                except errors.CsError as exc:
                    answers[i] = Answer(systems[i], error=exc)
                    del waiting[i]
                    continue
                if snapshot is not None:
                    answers[i] = Answer(systems[i], snapshot, (time.monotonic() - sent) * 1000)
                    del waiting[i]
        for i, (client, _, _) in waiting.items():
            answers[i] = Answer(systems[i], error=client.no_answer(ops.SYSTEM_SHOW.name))
    finally:
        for client in clients:
            client.close()
        context.term()
    return answers
