"""The socket between a cstorch training process and its input workers (docs/cstorch.md, "Input workers").

The trainer binds one ZeroMQ ROUTER socket (tcp, so a worker on another host can connect; the
address comes from $CS_INPUT_WORKER_BIND, default tcp://127.0.0.1:*) as a CURVE server with a key
pair made for this run; each worker connects a DEALER as a CURVE client with a per-run client key
pair. Everything on the wire is encrypted and authenticated by CURVE, and the first message a
worker sends (`hello`) carries the run's hello secret: the trainer ignores every other message
from an identity that has not said hello with it. The secrets (keys, hello secret, later csd's join
token) reach a worker in its `Spec`, never on a command line.

Messages are multipart: the kind, then a JSON header, then (a batch) the tensors, serialized with
torch.save and read with torch.load(weights_only=True), which builds tensors, dicts, lists and
tuples and refuses anything else (no code runs from a worker's bytes); a restartable input's
states travel the same way, both ways.

  worker → trainer   hello {task, pid, secret}      batch {seq, samples} <tensors>
                     error {traceback}              bye {produced, consumed, streamed}
                     state {step} <its dataloader's state>
  trainer → worker   plan {num_steps, intervals, kwargs} [<start state>]   ack {samples}
                     join {run_id, token, name}      stop {}
"""

from __future__ import annotations

import io
import json
import os
import secrets
from dataclasses import dataclass

import torch
import zmq

from csadmin.shared.rendezvous import BIND_ENV

DEFAULT_BIND = "tcp://127.0.0.1:*"


@dataclass(frozen=True)
class Spec:
    """What a worker needs to reach its trainer: where, and the run's secrets."""

    endpoint: str
    server_public: bytes
    client_public: bytes
    client_secret: bytes
    hello_secret: str
    task: int
    count: int


def encode(kind: str, header: dict, payload: bytes | None = None) -> list[bytes]:
    frames = [kind.encode(), json.dumps(header).encode()]
    return frames + [payload] if payload is not None else frames


def decode(frames: list[bytes]) -> tuple[str, dict, bytes | None]:
    """(kind, header, payload); raises ValueError on a malformed message."""
    if len(frames) not in (2, 3):
        raise ValueError("malformed message")
    header = json.loads(frames[1])
    if not isinstance(header, dict):
        raise ValueError("malformed header")
    return frames[0].decode("ascii"), header, frames[2] if len(frames) == 3 else None


def pack_batch(batch) -> bytes:
    buf = io.BytesIO()
    torch.save(batch, buf)
    return buf.getvalue()


def unpack_batch(data: bytes):
    return torch.load(io.BytesIO(data), weights_only=True)


class TrainerSocket:
    """The trainer's side: one ROUTER for every worker. `specs(n)` are what each worker gets."""

    def __init__(self, linger_ms: int = 0):
        self.context = zmq.Context()
        self.server_public, server_secret = zmq.curve_keypair()
        self.client_public, self.client_secret = zmq.curve_keypair()
        self.hello_secret = secrets.token_urlsafe(24)
        self.socket = self.context.socket(zmq.ROUTER)
        self.socket.linger = linger_ms  # remote workers: their last `stop` still leaves on close
        self.socket.curve_server = True
        self.socket.curve_secretkey = server_secret
        self.socket.curve_publickey = self.server_public
        self.socket.bind(os.environ.get(BIND_ENV) or DEFAULT_BIND)
        self.endpoint = self.socket.getsockopt_string(zmq.LAST_ENDPOINT)

    def specs(self, count: int) -> list[Spec]:
        return [Spec(self.endpoint, self.server_public, self.client_public, self.client_secret,
                     self.hello_secret, task, count) for task in range(count)]

    def send(self, identity: bytes, kind: str, header: dict, payload: bytes | None = None) -> None:
        self.socket.send_multipart([identity] + encode(kind, header, payload))

    def recv(self, timeout_ms: int) -> tuple[bytes, str, dict, bytes | None] | None:
        """The next message (identity, kind, header, payload), or None after `timeout_ms`."""
        if not self.socket.poll(timeout_ms):
            return None
        frames = self.socket.recv_multipart()
        try:
            return (frames[0],) + decode(frames[1:])
        except (ValueError, UnicodeDecodeError):
            return (frames[0], "malformed", {}, None)

    def close(self) -> None:
        self.socket.close()
        self.context.term()


class WorkerSocket:
    """A worker's side: a DEALER to its trainer, in a context of its own (after fork too)."""

    def __init__(self, spec: Spec):
        self.context = zmq.Context()
        self.socket = self.context.socket(zmq.DEALER)
        self.socket.linger = 2000  # the last messages (bye, error) still leave when it closes
        self.socket.curve_serverkey = spec.server_public
        self.socket.curve_publickey = spec.client_public
        self.socket.curve_secretkey = spec.client_secret
        self.socket.connect(spec.endpoint)

    def send(self, kind: str, header: dict, payload: bytes | None = None) -> None:
        self.socket.send_multipart(encode(kind, header, payload))

    def recv(self, timeout_ms: int) -> tuple[str, dict, bytes | None] | None:
        if not self.socket.poll(timeout_ms):
            return None
        return decode(self.socket.recv_multipart())

    def close(self) -> None:
        self.socket.close()
        self.context.term()
