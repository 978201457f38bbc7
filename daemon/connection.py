"""The connection file: where csd listens and its public key, for local clients (no secrets).

Like Jupyter's kernel connection files: `csd.json` next to the ipc sockets (or in the runtime
directory for TCP, or `--connection-file`), written at start, removed at a clean stop, 0644:

    {"protocol": 1, "endpoint": "ipc:///run/csd/csd.sock", "events_endpoint": "ipc:///run/csd/csd-events.sock",
     "server_key": "<40 Z85 characters>", "serial": "CS2-0001", "pid": 1234}

Clients read it with `--connect FILE` / `$CS_CONNECT` (csadmin/connection.py); remote runtimes
copy it, or pass `--endpoint` and `--server-key` themselves.
"""

from __future__ import annotations

import json
import os

import zmq

from csadmin import protocol
from csadmin.keyfile import write_atomically

FILE_NAME = "csd.json"
_WILDCARDS = {"0.0.0.0": "127.0.0.1", "*": "127.0.0.1", "[::]": "[::1]"}


def path_for(config) -> str:
    """`config.connection_file` if set; else next to an ipc request socket; else the runtime dir."""
    explicit = getattr(config, "connection_file", "")
    if explicit:
        return explicit
    if config.endpoint.startswith("ipc://"):
        return os.path.join(os.path.dirname(os.path.abspath(config.endpoint[len("ipc://"):])), FILE_NAME)
    return os.path.join(protocol.runtime_dir(), FILE_NAME)


def bound(sock: zmq.Socket) -> str:
    """The endpoint a socket actually bound (a TCP port 0 becomes the port it got)."""
    return sock.getsockopt(zmq.LAST_ENDPOINT).decode()


def local(endpoint: str) -> str:
    """A connectable form of a bound endpoint: a wildcard TCP host becomes loopback."""
    if endpoint.startswith("tcp://"):
        host, sep, port = endpoint[len("tcp://"):].rpartition(":")
        return f"tcp://{_WILDCARDS.get(host, host)}{sep}{port}"
    return endpoint


def write(path: str, endpoint: str, events_endpoint: str, server_key: str, serial: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o755, exist_ok=True)
    body = {
        "protocol": protocol.VERSION, "endpoint": local(endpoint), "events_endpoint": local(events_endpoint),
        "server_key": server_key, "serial": serial, "pid": os.getpid(),
    }
    write_atomically(path, (json.dumps(body, indent=2) + "\n").encode(), 0o644)


def remove(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as f:
            if json.load(f).get("pid") != os.getpid():
                return  # another csd's file now: not ours to remove
        os.unlink(path)
    except (OSError, ValueError):
        pass
