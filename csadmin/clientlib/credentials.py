"""What a client needs to talk to csd, and where it finds it (stdlib only: on the one-shot path).

The daemon's endpoint and public key come from, first match wins:
  1. `--endpoint` / `$CS_ENDPOINT` and `--server-key` / `$CS_SERVER_KEY`, given explicitly;
  2. a connection file (csadmin/shared/connection.py): `--connect FILE` / `$CS_CONNECT`; else `csd.json`
     beside an explicit ipc endpoint; else, with no endpoint given, the default `<runtime dir>/csd.json`.
The client's own keypair is the secret key file `--key` / `$CS_KEY`, else
`$XDG_CONFIG_HOME/cs/client.key_secret` (~/.config/cs/client.key_secret).
"""

from __future__ import annotations

import os

from .. import errors
from ..shared import connection
from ..shared.keyfile import KeyFileError, read_key_file, valid_z85_key


def default_key_file() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cs", "client.key_secret")


def check_listening(endpoint: str | None, probe: bool = True) -> None:
    """Raise Unreachable unless something accepts connections on `endpoint`'s ipc socket file
    (a killed csd leaves the file behind, so its mere existence says nothing); say plainly when
    we may not reach it at all. With `probe` False only the file is checked (it exists, we may
    write to it), not whether anyone listens: for a caller that learns a refused connection from
    ZeroMQ's monitor instead (csadmin/fleet/query.py: a probe per system costs more than the
    answers)."""
    if not endpoint or not endpoint.startswith("ipc://") or endpoint.startswith("ipc://@"):
        return
    path = endpoint[len("ipc://"):]
    not_listening = errors.Unreachable(
        f"csd is not listening at {endpoint}.",
        "Is csd running (`systemctl status csd`)? Or pass --endpoint / set CS_ENDPOINT.",
    )
    if not _visible(path):
        raise not_listening
    if not probe:
        if not os.access(path, os.W_OK):
            raise _no_access(path)
        return
    import _socket  # the C module: `socket` would cost the one-shot ~4 ms to import

    probe = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(path)
    except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError):
        raise not_listening from None
    except PermissionError:
        raise _no_access(path) from None
    except OSError:
        pass  # busy or odd: let ZeroMQ try, with its timeout
    finally:
        probe.close()


def _no_access(path: str) -> errors.NoCredentials:
    return errors.NoCredentials(
        f"Permission denied on {path}: only user csd and members of group csd may reach csd there.",
        "Ask an admin to add you to group csd (`usermod -aG csd USER`), then log in again.",
    )


def _visible(path: str) -> bool:
    """Whether the file exists; a directory we may not enter (csd's /run/csd is for user and
    group csd only) is said plainly rather than taken for "csd is not running"."""
    try:
        os.stat(path)
        return True
    except FileNotFoundError:
        return False
    except PermissionError:
        raise _no_access(os.path.dirname(path)) from None


class Resolved:
    """Everything a socket needs: endpoints and the three CURVE keys (Z85 text)."""

    __slots__ = ("endpoint", "events_endpoint", "server_key", "public_key", "secret_key")

    def __init__(self, endpoint, events_endpoint, server_key, public_key, secret_key):
        self.endpoint = endpoint
        self.events_endpoint = events_endpoint
        self.server_key = server_key
        self.public_key = public_key
        self.secret_key = secret_key


def resolve(endpoint: str | None = None, server_key: str | None = None, connect: str | None = None,
            key: str | None = None) -> Resolved:
    env = os.environ
    endpoint = endpoint or env.get("CS_ENDPOINT") or None
    server_key = server_key or env.get("CS_SERVER_KEY") or None
    connect = connect or env.get("CS_CONNECT") or None
    info = None
    if connect:
        info = connection.read(connect)
    elif not (endpoint and server_key):
        candidate = connection.default_file() if endpoint is None else connection.file_beside(endpoint)
        if candidate and _visible(candidate):
            info = connection.read(candidate)
    events_endpoint = None
    if info is not None:
        if endpoint is None or endpoint == info["endpoint"]:
            endpoint = info["endpoint"]
            events_endpoint = info.get("events_endpoint")
        server_key = server_key or info["server_key"]
    endpoint = endpoint or connection.default_endpoint()
    if not server_key:
        check_listening(endpoint)  # no csd there says more than a missing key would (a stopped csd took its csd.json)
        raise errors.NoCredentials(
            f"No server key for {endpoint}: cs needs csd's public key to talk to it securely.",
            "Pass --connect FILE (csd writes csd.json when it starts) or --server-key KEY (`csd keys init` prints it).",
        )
    if not valid_z85_key(server_key):
        raise errors.NoCredentials(f"{server_key!r} is not a server key (40 Z85 characters).",
                                   "Copy it from csd.json or from `csd keys init`.")
    key_path = key or env.get("CS_KEY") or default_key_file()
    try:
        public, secret = read_key_file(key_path)
    except KeyFileError as exc:
        raise errors.NoCredentials(
            str(exc), "Pass your secret key file with --key FILE or CS_KEY (an admin makes one: `csd keys add NAME --role ROLE`)."
        ) from None
    return Resolved(endpoint, events_endpoint, server_key, public, secret)
