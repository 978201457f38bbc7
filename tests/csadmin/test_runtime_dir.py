"""Where csd's ipc sockets are by default, for csd and for `cs`: under systemd both must agree
on /run/csd even though csd runs as user csd and admins as themselves."""

import os

import pytest

from csadmin import protocol


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ("CSD_RUNTIME_DIR", "RUNTIME_DIRECTORY", "XDG_RUNTIME_DIR", "CS_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)


def test_explicit_directory_wins(monkeypatch):
    monkeypatch.setenv("CSD_RUNTIME_DIR", "/srv/csd")
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/csd")
    assert protocol.runtime_dir() == "/srv/csd"


def test_systemd_runtime_directory_for_the_service(monkeypatch):
    monkeypatch.setenv("RUNTIME_DIRECTORY", "/run/csd")
    assert protocol.default_endpoint() == "ipc:///run/csd/csd.sock"
    assert protocol.default_events_endpoint() == "ipc:///run/csd/csd-events.sock"


def test_installed_service_directory_is_found_by_admins(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: p == "/run/csd" or real_isdir(p))
    assert protocol.runtime_dir() == "/run/csd"


def test_private_csd_without_the_service(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(os.path, "isdir", lambda p: False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert protocol.runtime_dir() == "/run/user/1000/csd"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert protocol.runtime_dir() == "/tmp/csd-1000"
