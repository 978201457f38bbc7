"""The key registry and key files, as single units (real files in a temp dir, no daemon)."""

import json
import os
import socket
import stat

import pytest
import zmq

from csadmin import errors
from csadmin.clientlib.credentials import resolve
from csadmin.shared.keyfile import KeyFileError, read_key_file, write_key_file
from csadmin.daemon.auth.key_registry import KeyManagementError, KeyStore, Registry, role_allows


class RecordingLog:
    def __init__(self):
        self.lines = []

    def __getattr__(self, level):
        return lambda event, **kw: self.lines.append((level, event, kw))


def test_roles_are_ordered_admin_operator_viewer():
    assert role_allows("admin", "operator") and role_allows("operator", "operator") and role_allows("viewer", "viewer")
    assert not role_allows("viewer", "operator") and not role_allows("operator", "admin")
    assert not role_allows(None, "viewer") and not role_allows("root", "viewer")


def test_key_files_round_trip_and_match_pyzmq_certificates(tmp_path):
    import zmq.auth

    public, secret = (k.decode() for k in zmq.curve_keypair())
    path = str(tmp_path / "a.key_secret")
    write_key_file(path, "a", public, secret)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert read_key_file(path) == (public, secret)
    assert zmq.auth.load_certificate(path) == (public.encode(), secret.encode())  # interoperable
    with pytest.raises(KeyFileError, match="already exists"):
        write_key_file(path, "a", public, secret)
    public_only = str(tmp_path / "a.key")
    write_key_file(public_only, "a", public)
    with pytest.raises(KeyFileError, match="no secret key"):
        read_key_file(public_only)
    with pytest.raises(KeyFileError, match="No key file"):
        read_key_file(str(tmp_path / "missing"))


@pytest.mark.parametrize("umask", [0o077, 0o007, 0o022, 0o000])
def test_key_file_modes_are_exact_whatever_the_umask(tmp_path, umask):
    # `csd keys` runs with umask 0077 and csd under the unit's UMask=0007; docs/security.md
    # promises 0644 for public files (server.key, csd.json) and 0600 for secrets in every case.
    public, secret = (k.decode() for k in zmq.curve_keypair())
    old = os.umask(umask)
    try:
        write_key_file(str(tmp_path / "k.key"), "k", public)
        write_key_file(str(tmp_path / "k.key_secret"), "k", public, secret)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "k.key").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "k.key_secret").st_mode) == 0o600


def test_add_validates_names_roles_and_duplicates(tmp_path):
    store = KeyStore(str(tmp_path / "state"))
    for name in ("", "../x", "a b", "x" * 65):
        with pytest.raises(KeyManagementError, match="Bad key name"):
            store.add(name, "viewer")
    with pytest.raises(KeyManagementError, match="Bad role"):
        store.add("ok", "root")
    with pytest.raises(KeyManagementError, match="Z85"):
        store.add("ok", "viewer", public="short")
    entry, secret_path = store.add("ops", "operator")
    assert secret_path == os.path.join(store.clients_dir, "ops.key_secret")
    assert read_key_file(secret_path)[0] == entry["public_key"]
    with pytest.raises(KeyManagementError, match="already exists"):
        store.add("ops", "viewer")
    with pytest.raises(KeyManagementError, match="already registered"):
        store.add("ops2", "viewer", public=entry["public_key"])
    # Revoked: kept for the record, its secret deleted, its name free again.
    store.revoke("ops")
    assert not os.path.exists(secret_path)
    assert store.load()[0]["revoked"]
    with pytest.raises(KeyManagementError, match="No active key"):
        store.revoke("ops")
    store.add("ops", "viewer")
    assert [(e["name"], e["role"]) for e in store.load()] == [("ops", "viewer")]


def test_registry_follows_the_file_and_fails_closed(tmp_path):
    store = KeyStore(str(tmp_path / "state"))
    entry, _ = store.add("alice", "admin")
    log = RecordingLog()
    registry = Registry(store.registry_path, log)
    assert registry.name_of(entry["public_key"]) == "alice" and registry.role_of("alice") == "admin"
    store.revoke("alice")
    registry.refresh()  # one stat sees the new file
    assert registry.name_of(entry["public_key"]) is None and registry.role_of("alice") is None
    bob, _ = store.add("bob", "viewer")
    registry.refresh()
    assert registry.role_of("bob") == "viewer"
    with open(store.registry_path, "w") as f:
        f.write("{damaged")
    registry.refresh()
    assert registry.role_of("bob") is None  # unreadable registry: nobody is admitted
    assert any(event == "key_registry_unreadable" for _, event, _ in log.lines)
    os.unlink(store.registry_path)
    registry.refresh()
    assert registry.role_of("bob") is None


def test_a_passing_read_failure_is_retried_not_remembered(tmp_path, monkeypatch):
    """Out of descriptors, reading the registry fails with OSError; that must not shut every
    key out until the file happens to change."""
    from csadmin.daemon.auth import key_registry as keys_module

    store = KeyStore(str(tmp_path / "state"))
    store.add("alice", "admin")
    real = keys_module.read_registry
    monkeypatch.setattr(keys_module, "read_registry", lambda path: (_ for _ in ()).throw(OSError(24, "Too many open files")))
    registry = Registry(store.registry_path, RecordingLog())
    assert registry.role_of("alice") is None  # fails closed meanwhile
    monkeypatch.setattr(keys_module, "read_registry", real)
    registry.refresh()
    assert registry.role_of("alice") == "admin"


def test_server_keypair_is_made_once_and_kept_secret(tmp_path):
    store = KeyStore(str(tmp_path / "state"))
    first = store.ensure_server_keypair()
    assert store.ensure_server_keypair() == first
    assert stat.S_IMODE(os.stat(store.server_secret_path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(store.dir).st_mode) == 0o700
    os.chmod(store.server_secret_path, 0o640)
    with pytest.raises(KeyManagementError, match="chmod 600"):
        store.ensure_server_keypair()


def test_client_finds_endpoint_and_keys(tmp_path, monkeypatch):
    for var in ("CS_CONNECT", "CS_ENDPOINT", "CS_SERVER_KEY", "CS_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CSD_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    server_key = zmq.curve_keypair()[0].decode()
    key = str(tmp_path / "me.key_secret")
    write_key_file(key, "me", *(k.decode() for k in zmq.curve_keypair()))
    # Nothing at all: a clear error, not a hang. No socket, or a dead one (a killed csd leaves
    # its file): csd is not running; a listening socket but no connection file: say the server
    # key is missing.
    with pytest.raises(errors.Unreachable, match=f"csd is not listening at ipc://{tmp_path}/csd.sock"):
        resolve(key=key)
    (tmp_path / "csd.sock").touch()
    with pytest.raises(errors.Unreachable, match="csd is not listening"):
        resolve(key=key)
    (tmp_path / "csd.sock").unlink()
    listening = socket.socket(socket.AF_UNIX)
    listening.bind(str(tmp_path / "csd.sock"))
    listening.listen()
    with pytest.raises(errors.NoCredentials, match="No server key"):
        resolve(key=key)
    listening.close()
    # The default connection file in the runtime dir.
    conn = {"endpoint": "ipc:///x/csd.sock", "events_endpoint": "ipc:///x/e.sock", "server_key": server_key}
    (tmp_path / "csd.json").write_text(json.dumps(conn))
    r = resolve(key=key)
    assert (r.endpoint, r.events_endpoint, r.server_key) == ("ipc:///x/csd.sock", "ipc:///x/e.sock", server_key)
    # Explicit TCP endpoint and server key: no connection file involved.
    other = zmq.curve_keypair()[0].decode()
    r = resolve("tcp://host:9000", other, key=key)
    assert (r.endpoint, r.events_endpoint, r.server_key) == ("tcp://host:9000", None, other)
    # A copied connection file with the endpoint overridden (a remote runtime).
    monkeypatch.setenv("CS_CONNECT", str(tmp_path / "csd.json"))
    r = resolve("tcp://host:9000", key=key)
    assert (r.endpoint, r.server_key) == ("tcp://host:9000", server_key)
    # The key from $XDG_CONFIG_HOME/cs/client.key_secret when none is named.
    with pytest.raises(errors.NoCredentials, match="No key file"):
        resolve()
    os.makedirs(tmp_path / "config" / "cs")
    os.rename(key, tmp_path / "config" / "cs" / "client.key_secret")
    assert resolve().server_key == server_key
