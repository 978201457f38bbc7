"""The key registry and the server's keypair, kept in `<state dir>/keys/`.

    keys/                    0700, owned by csd's user
      server.key             the server's public key (also in the connection file)
      server.key_secret      the server's secret key, 0600
      registry.json          0600: every client key: name, role, public key, created, revoked
      clients/NAME.key_secret  client secrets made by `csd keys add` (0600), to hand to that client

`csd keys` (keys_command.py) writes the registry atomically (temp file + rename) under a lock; the
daemon only reads it, through `Registry`, which re-reads the file whenever its identity (inode,
mtime, size) changes: checked once per batch of messages, after they were received (daemon/
server.py), so a key revoked before a message was sent is refused from that very message, with
no signal to deliver and no pid file to trust. SIGHUP forces a re-read too.

A registry that cannot be read admits nobody (fail closed).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import time

import zmq

from csadmin.shared.atomic_write import write_atomically
from csadmin.shared.keyfile import KeyFileError, read_key_file, valid_z85_key, write_key_file

ROLES = ("viewer", "operator", "admin")  # each role may do everything the ones before it may
RANK = {role: i for i, role in enumerate(ROLES)}
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


class KeyManagementError(ValueError):
    """A key-management request that cannot be done; the message says why and what to do."""


def role_allows(role: str | None, needed: str) -> bool:
    """True if `role` may run an operation whose least role is `needed`."""
    return role is not None and RANK.get(role, -1) >= RANK[needed]


def read_registry(path: str) -> list[dict]:
    """The entries of a registry file (raises OSError or ValueError if it is unusable)."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict) or not isinstance(data.get("keys"), list):
        raise ValueError("not a key registry (no 'keys' list)")
    return [e for e in data["keys"] if isinstance(e, dict) and "name" in e and "public_key" in e]


def now_ms() -> int:
    return int(time.time() * 1000)


class KeyStore:
    """The files in `<state dir>/keys/`: paths, the server keypair, and registry edits."""

    def __init__(self, state_dir: str):
        self.state_dir = state_dir
        self.dir = os.path.join(state_dir, "keys")
        self.registry_path = os.path.join(self.dir, "registry.json")
        self.server_public_path = os.path.join(self.dir, "server.key")
        self.server_secret_path = os.path.join(self.dir, "server.key_secret")
        self.clients_dir = os.path.join(self.dir, "clients")

    # -- the server keypair ----------------------------------------------------------------------

    def ensure_dirs(self) -> None:
        os.makedirs(self.state_dir, mode=0o750, exist_ok=True)
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        os.makedirs(self.clients_dir, mode=0o700, exist_ok=True)

    def ensure_server_keypair(self) -> tuple[str, str]:
        """Return the server's (public, secret) Z85 keys, creating them on first use."""
        self.ensure_dirs()
        if not os.path.exists(self.server_secret_path):
            public, secret = (k.decode() for k in zmq.curve_keypair())
            write_key_file(self.server_secret_path, "csd", public, secret)
            if not os.path.exists(self.server_public_path):
                write_key_file(self.server_public_path, "csd", public)
        try:
            public, secret = read_key_file(self.server_secret_path)
        except KeyFileError as exc:
            raise KeyManagementError(f"The server key is unusable: {exc}") from None
        return public, secret

    # -- the registry (edited by `csd keys`, read by the daemon) ---------------------------------

    def load(self) -> list[dict]:
        """Every key entry, revoked ones included. A missing registry is an empty one."""
        try:
            return read_registry(self.registry_path)
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            raise KeyManagementError(
                f"The key registry {self.registry_path} cannot be read ({exc}); restore it from backup."
            ) from None

    def _save(self, entries: list[dict]) -> None:
        body = json.dumps({"version": 1, "keys": entries}, indent=2).encode() + b"\n"
        write_atomically(self.registry_path, body, 0o600)

    def _locked(self):
        self.ensure_dirs()
        lock = open(os.path.join(self.dir, "registry.lock"), "a")
        fcntl.flock(lock, fcntl.LOCK_EX)  # two `csd keys` at once must not lose an edit
        return lock

    def add(self, name: str, role: str, public: str | None = None, out: str | None = None) -> tuple[dict, str | None]:
        """Register a client key. Without `public`, make a keypair and write its secret to `out`
        (default `keys/clients/NAME.key_secret`). Return (entry, path of the secret or None)."""
        if not NAME_RE.match(name or ""):
            raise KeyManagementError(f"Bad key name {name!r}: use letters, digits, '.', '_' or '-' (at most 64).")
        if role not in RANK:
            raise KeyManagementError(f"Bad role {role!r}: choose one of {', '.join(reversed(ROLES))}.")
        if public is not None and not valid_z85_key(public):
            raise KeyManagementError("--public-key must be a 40-character Z85 CURVE public key (as in a .key file).")
        with self._locked():
            entries = self.load()
            active = [e for e in entries if not e.get("revoked")]
            if any(e["name"] == name for e in active):
                raise KeyManagementError(f"A key named {name!r} already exists; revoke it first or pick another name.")
            secret_path = None
            if public is None:
                public, secret = (k.decode() for k in zmq.curve_keypair())
                secret_path = out or os.path.join(self.clients_dir, f"{name}.key_secret")
                try:
                    write_key_file(secret_path, name, public, secret)
                except KeyFileError as exc:
                    raise KeyManagementError(str(exc)) from None
            if any(e["public_key"] == public for e in active):
                raise KeyManagementError("That public key is already registered under another name.")
            entry = {"name": name, "role": role, "public_key": public, "created": now_ms(), "revoked": None}
            entries = [e for e in entries if e["name"] != name] + [entry]  # a revoked name may be reused
            self._save(entries)
        return entry, secret_path

    def revoke(self, name: str) -> dict:
        """Mark a key revoked (kept for the record); delete the secret we made for it, if any."""
        with self._locked():
            entries = self.load()
            for entry in entries:
                if entry["name"] == name and not entry.get("revoked"):
                    entry["revoked"] = now_ms()
                    self._save(entries)
                    break
            else:
                raise KeyManagementError(f"No active key named {name!r}; `csd keys list` shows them.")
        try:
            os.unlink(os.path.join(self.clients_dir, f"{name}.key_secret"))
        except FileNotFoundError:
            pass
        return entry


class Registry:
    """The daemon's read-only view of registry.json, refreshed when the file changes."""

    def __init__(self, path: str, log):
        self.path = path
        self.log = log
        self._signature = None  # (inode, mtime_ns, size) of the file last loaded
        self._roles: dict[str, str] = {}  # active key name -> role
        self._names: dict[str, str] = {}  # active public key (Z85) -> name
        self.loaded = object()  # a new token each time the file is read: what was derived from the old one is stale
        self.refresh(force=True)

    def refresh(self, force: bool = False) -> None:
        """Re-read the file if it changed since the last read (one stat; ~1 µs)."""
        try:
            st = os.stat(self.path)
            signature = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            signature = None
        if signature == self._signature and not force:
            return
        try:
            entries = read_registry(self.path) if signature is not None else []
        except (OSError, ValueError) as exc:
            entries = []
            # Not remembered as read: a passing failure (out of descriptors) is retried on the
            # next message instead of shutting everyone out until the file changes.
            signature = None if isinstance(exc, OSError) else signature
            self.log.error("key_registry_unreadable", path=self.path, reason=str(exc), effect="nobody is admitted")
        self._signature = signature
        self.loaded = object()
        active = [e for e in entries if not e.get("revoked") and e.get("role") in RANK]
        self._roles = {e["name"]: e["role"] for e in active}
        self._names = {e["public_key"]: e["name"] for e in active}
        self.log.info("key_registry_loaded", path=self.path, keys=len(self._roles))
        if not self._roles:
            self.log.warning("no_client_keys", hint="register one: csd keys init, or csd keys add NAME --role admin")

    def name_of(self, public_z85: str) -> str | None:
        return self._names.get(public_z85)

    def role_of(self, name: str | None) -> str | None:
        return self._roles.get(name) if name else None
