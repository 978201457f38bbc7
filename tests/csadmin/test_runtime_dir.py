"""Where csd's ipc sockets are by default, for csd and for `cs`: under systemd both must agree
on /run/csd even though csd runs as user csd and admins as themselves."""

import os

import pytest

from csadmin.shared import connection


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("CSD_RUNTIME_DIR", "RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR", "CS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def test_explicit_directory_wins(monkeypatch):
    monkeypatch.setenv("CSD_RUNTIME_DIR", "/srv/csd")
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/csd")
    assert connection.runtime_dir() == "/srv/csd"


def test_systemd_runtime_directory_for_the_service(monkeypatch):
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/csd")
    assert connection.default_endpoint() == "ipc:///run/csd/csd.sock"
    assert connection.default_events_endpoint() == "ipc:///run/csd/csd-events.sock"


def test_installed_service_directory_is_found_by_admins(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: p == "/run/csd" or real_isdir(p))
    assert connection.runtime_dir() == "/run/csd"


def test_private_csd_without_the_service(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os.path, "isdir", lambda p: False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert connection.runtime_dir() == "/run/user/1000/csd"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert connection.runtime_dir() == "/tmp/csd-1000"


@pytest.mark.parametrize("bound, host, expected", [
    ("tcp://0.0.0.0:9000", None, "tcp://127.0.0.1:9000"),  # what csd writes in its connection file
    ("tcp://*:9000", None, "tcp://127.0.0.1:9000"),
    ("tcp://[::]:9000", None, "tcp://[::1]:9000"),
    ("tcp://0.0.0.0:9001", "cs2-mgmt", "tcp://cs2-mgmt:9001"),  # what a remote runtime subscribes to
    ("tcp://10.0.0.7:9001", "cs2-mgmt", "tcp://10.0.0.7:9001"),
    ("ipc:///run/csd/csd.sock", "cs2-mgmt", "ipc:///run/csd/csd.sock"),
])
def test_a_wildcard_bind_address_becomes_one_a_client_can_connect_to(bound, host, expected):
    assert connection.connectable(bound, host) == expected


def test_the_connection_file_is_beside_an_ipc_socket_and_in_the_runtime_dir_otherwise(monkeypatch):
    monkeypatch.setenv("CSD_RUNTIME_DIR", "/srv/csd")
    assert connection.file_beside("ipc:///tmp/x/csd.sock") == "/tmp/x/csd.json"
    assert connection.file_beside("tcp://127.0.0.1:9000") is None
    assert connection.file_beside("ipc://@abstract") is None
    assert connection.default_file() == "/srv/csd/csd.json"
