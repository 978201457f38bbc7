"""The client library as a runtime uses it: every error path closes its sockets, so neither a
call nor `Client.close()` ever hangs; bad credentials and a dead csd are told apart at once
(issue 10). Runs the real example runtime and the real client in subprocesses, with a deadline,
so a hang fails the test instead of hanging the suite."""

import os
import socket
import subprocess
import sys
import time

import pytest

from csadmin import errors
from csadmin.client import Client
from tests.harness import ROOT

SNIPPET = """
from csadmin.client import Client
from csadmin import errors
import sys
try:
    with Client() as cs:
        cs.wait_for(state="ACTIVE", timeout=60)
except errors.CsError as exc:
    print(type(exc).__name__, exc.message)
    sys.exit(exc.exit_code)
"""


def _run(args, env, timeout=20.0):
    started = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return r, time.monotonic() - started


def _env(csd, **changes):
    env = csd.env()
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    env["CSD_RUNTIME_DIR"] = os.path.join(csd.dir, "no-such-runtime-dir")  # no default csd.json
    return env


@pytest.fixture
def bad_keys(csd, tmp_path):
    empty = tmp_path / "empty.key_secret"
    empty.write_text("")
    empty.chmod(0o600)
    public_only = tmp_path / "public.key"
    public_only.write_text(open(csd.admin_key).read().split("secret-key")[0])
    public_only.chmod(0o600)
    return {"missing": str(tmp_path / "nope.key_secret"), "empty": str(empty), "public-only": str(public_only),
            "a directory": str(tmp_path)}


@pytest.mark.parametrize("kind", ["missing", "empty", "public-only", "a directory"])
@pytest.mark.parametrize("program", ["snippet", "train_loop"])
def test_a_runtime_with_an_unusable_key_fails_at_once(csd, bad_keys, kind, program):
    """The README snippet and examples/train_loop.py hung forever here: the SUB socket made
    before the key was read was never closed, so Context.term() blocked."""
    args = [sys.executable, "-c", SNIPPET] if program == "snippet" else \
        [sys.executable, "examples/train_loop.py", "--performance-dir", os.path.join(csd.dir, "out")]
    r, took = _run(args, _env(csd, CS_KEY=bad_keys[kind]))
    assert r.returncode == errors.EXIT_PERMISSION, r.stdout + r.stderr
    assert "NoCredentials" in r.stdout or "NO_CREDENTIALS" in r.stderr
    assert "Traceback" not in r.stderr
    assert took < 10


@pytest.mark.parametrize("program", ["snippet", "train_loop"])
def test_a_runtime_without_a_connection_file_fails_at_once(csd, program):
    args = [sys.executable, "-c", SNIPPET] if program == "snippet" else \
        [sys.executable, "examples/train_loop.py", "--performance-dir", os.path.join(csd.dir, "out")]
    r, took = _run(args, _env(csd, CS_CONNECT=None))
    assert r.returncode in (errors.EXIT_PERMISSION, errors.EXIT_UNREACHABLE), r.stdout + r.stderr
    assert "Traceback" not in r.stderr and took < 10


def test_close_never_blocks_even_with_a_socket_left_open(csd):
    client = Client(connect=csd.connection_file, key=csd.admin_key, timeout=2)
    client.system_show()
    leaked = client.subscribe()  # a caller that forgot to close its subscription
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 2
    assert leaked.closed


def test_every_error_path_leaves_no_socket_open(csd, tmp_path):
    import zmq

    ctx = zmq.Context()
    try:
        client = Client(connect=csd.connection_file, key=str(tmp_path / "missing"), context=ctx)
        for call in (client.system_show, client.subscribe, lambda: client.wait_for(state="ACTIVE", timeout=1)):
            with pytest.raises(errors.NoCredentials):
                call()
        bad_endpoint = Client("tcp://", connect=csd.connection_file, key=csd.admin_key, context=ctx)
        with pytest.raises(errors.CsError):
            bad_endpoint.system_show()
        assert all(s.closed for s in ctx._sockets), "no socket is left open"
    finally:
        ctx.destroy(linger=0)


def test_a_key_path_that_is_a_directory_is_a_clear_error(csd, tmp_path):
    """It was a raw IsADirectoryError traceback, exit 1."""
    r = csd.cs("system", "show", key=str(tmp_path))
    assert r.returncode == errors.EXIT_PERMISSION
    assert "is a directory" in r.stderr and "Traceback" not in r.stderr


def test_a_stopped_csd_is_not_listening_even_with_its_socket_file_left(csd):
    """A csd killed (or stopped by an older version) leaves its socket file; `cs --endpoint
    ipc://…/csd.sock system show` said "No server key" (exit 5), not "not listening" (exit 7)."""
    path = csd.endpoint[len("ipc://"):]
    csd.kill9()
    assert os.path.exists(path), "kill -9 leaves the socket file"
    env = {k: v for k, v in csd.env().items() if k not in ("CS_CONNECT",)}
    r = subprocess.run([sys.executable, "-m", "csadmin", "--endpoint", csd.endpoint, "system", "show"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=30)
    assert r.returncode == errors.EXIT_UNREACHABLE, r.stderr
    assert "not listening" in r.stderr
    # The same after a clean stop (which removes the file) and with a plain file in its place.
    csd.start()
    csd.stop()
    with open(path, "w"):
        pass
    r = subprocess.run([sys.executable, "-m", "csadmin", "--endpoint", csd.endpoint, "system", "show"],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=30)
    assert r.returncode == errors.EXIT_UNREACHABLE and "not listening" in r.stderr


def test_a_live_csd_is_reached_through_its_socket_file(csd):
    r = csd.cs("--endpoint", csd.endpoint, "system", "show")
    assert r.returncode == 0, r.stderr
    probe = socket.socket(socket.AF_UNIX)
    probe.connect(csd.endpoint[len("ipc://"):])
    probe.close()
