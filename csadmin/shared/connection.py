"""Where csd listens and how to reach it, for csd and its clients alike (stdlib only: on the
one-shot path).

Defaults: csd's ipc sockets live in its runtime directory (`runtime_dir()`). Its connection file,
`csd.json`, like Jupyter's kernel connection files, says where it listens and its public key (no
secrets); csd writes it at start next to its ipc request socket (or in the runtime directory
for TCP, or `--connection-file`), 0644, and removes it at a clean stop:

    {"protocol": 1, "endpoint": "ipc:///run/csd/csd.sock", "events_endpoint": "ipc:///run/csd/csd-events.sock",
     "server_key": "<40 Z85 characters>", "serial": "CS2-0001", "pid": 1234}

Clients read it (`--connect FILE` / `$CS_CONNECT`, or beside the endpoint they were given:
csadmin/clientlib/credentials.py); remote runtimes copy it, or pass `--endpoint` and `--server-key`.
"""

from __future__ import annotations

import json
import os

from .. import errors
from . import protocol
from .keyfile import valid_z85_key

FILE_NAME = "csd.json"
# Bind addresses meaning "every interface": not an address a client can connect to.
_WILDCARD_HOSTS = {"*": "127.0.0.1", "0.0.0.0": "127.0.0.1", "[::]": "[::1]", "::": "[::1]", "[::0]": "[::1]"}


def runtime_dir() -> str:
    """The directory of csd's ipc sockets: `$CSD_RUNTIME_DIR`; `$RUNTIME_DIRECTORY` (set by
    systemd's RuntimeDirectory= for csd itself); /run/csd for root or when it exists (csd is
    installed as a service, so admins' `cs` finds it); else `$XDG_RUNTIME_DIR/csd`, else
    /tmp/csd-<uid> (a private csd run by hand)."""
    explicit = os.environ.get("CSD_RUNTIME_DIR") or os.environ.get("RUNTIME_DIRECTORY", "").split(":")[0]
    if explicit:
        return explicit
    if os.geteuid() == 0 or os.path.isdir("/run/csd"):
        return "/run/csd"
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "csd")
    return f"/tmp/csd-{os.geteuid()}"


def default_endpoint() -> str:
    return os.environ.get("CS_ENDPOINT") or f"ipc://{os.path.join(runtime_dir(), 'csd.sock')}"


def default_events_endpoint() -> str:
    return f"ipc://{os.path.join(runtime_dir(), 'csd-events.sock')}"


def connectable(endpoint: str, host: str | None = None) -> str:
    """A bound endpoint as a client connects to it: a wildcard TCP host (`*`, 0.0.0.0, ::)
    becomes `host` (the one the client reached csd by), or loopback."""
    if not endpoint.startswith("tcp://"):
        return endpoint
    bound_host, sep, port = endpoint[len("tcp://"):].rpartition(":")
    if bound_host in _WILDCARD_HOSTS:
        bound_host = host or _WILDCARD_HOSTS[bound_host]
    return f"tcp://{bound_host}{sep}{port}"


def events_endpoint_for(request_endpoint: str, hello: dict) -> str:
    """Where a client subscribes, from `meta.hello`: a client that reached csd over TCP (a
    remote runtime) gets the TCP events endpoint if csd has one, with a wildcard bind address
    replaced by the host the client used for requests."""
    chosen = hello.get("eventsEndpoint")
    if request_endpoint.startswith("tcp://"):
        chosen = hello.get("tcpEventsEndpoint") or chosen
        if chosen:
            chosen = connectable(chosen, request_endpoint[len("tcp://"):].rsplit(":", 1)[0])
    return chosen


# -- the connection file ---------------------------------------------------------------------------


def file_beside(endpoint: str) -> str | None:
    """Where the connection file of a csd listening on `endpoint` is: beside its ipc socket
    (None for TCP: a remote csd's file is not here)."""
    if not endpoint.startswith("ipc://") or endpoint.startswith("ipc://@"):
        return None
    return os.path.join(os.path.dirname(os.path.abspath(endpoint[len("ipc://"):])), FILE_NAME)


def default_file() -> str:
    return os.path.join(runtime_dir(), FILE_NAME)


def write(path: str, endpoint: str, events_endpoint: str, server_key: str, serial: str, metrics_url: str = "") -> None:
    """Write csd's connection file (csd, at start): its endpoints as clients connect to them (and
    where its Prometheus metrics are served, when they are)."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o755, exist_ok=True)
    body = {
        "protocol": protocol.VERSION, "endpoint": connectable(endpoint), "events_endpoint": connectable(events_endpoint),
        "server_key": server_key, "serial": serial, "pid": os.getpid(),
    }
    if metrics_url:
        body["metrics_url"] = metrics_url
    from .atomic_write import write_atomically  # csd's side only: not on a client's path

    write_atomically(path, (json.dumps(body, indent=2) + "\n").encode(), 0o644)


def remove(path: str) -> None:
    """Remove csd's connection file at a clean stop, unless another csd has written it since."""
    try:
        with open(path, encoding="utf-8") as f:
            if json.load(f).get("pid") != os.getpid():
                return  # another csd's file now: not ours to remove
        os.unlink(path)
    except (OSError, ValueError):
        pass


def read(path: str) -> dict:
    """A connection file's contents; Unreachable saying why if it is missing or not one."""
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except FileNotFoundError:
        raise errors.Unreachable(
            f"No connection file at {path}.",
            "Is csd running? It writes this file when it starts. Or pass --endpoint and --server-key.",
        ) from None
    except (OSError, ValueError) as exc:
        raise errors.Unreachable(f"Cannot read the connection file {path}: {exc}.") from None
    if not isinstance(info, dict) or not isinstance(info.get("endpoint"), str) \
            or not valid_z85_key(info.get("server_key", "")):
        raise errors.Unreachable(f"{path} is not a csd connection file (it needs endpoint and server_key).")
    return info
