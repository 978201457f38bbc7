"""`cs --embedded`: a private csd in a temporary directory, for demos and trying things out."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

from .. import errors
from ..client import Client


@contextlib.contextmanager
def embedded_daemon(activate_seconds: float = 5.0, standby_seconds: float = 3.0, startup_timeout: float = 20.0):
    """Start csd on ipc sockets in a temp dir with a fresh admin key, wait until it answers,
    yield (connection file, admin's secret key file), stop it. csd runs in its own session, so
    Ctrl-C at the terminal never reaches it."""
    tmp = tempfile.mkdtemp(prefix="csd-embedded-")
    endpoint = f"ipc://{tmp}/csd.sock"
    state_dir = os.path.join(tmp, "state")
    connection_file = os.path.join(tmp, "csd.json")
    key_file = os.path.join(tmp, "admin.key_secret")
    log_path = os.path.join(tmp, "csd.log")
    cmd = [
        sys.executable, "-m", "csadmin.daemon", "--state-dir", state_dir,
        "--endpoint", endpoint, "--events-endpoint", f"ipc://{tmp}/csd-events.sock",
        "--connection-file", connection_file,
        "--activate-seconds", str(activate_seconds), "--standby-seconds", str(standby_seconds),
    ]
    with open(log_path, "wb") as log:
        # The server keypair and an admin key, made by csd itself (csadmin never imports daemon).
        keys = subprocess.run(
            [sys.executable, "-m", "csadmin.daemon", "keys", "init", "--state-dir", state_dir, "--out", key_file],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        if keys.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise errors.Internal("Could not create keys for the embedded csd.", f"`csd keys init` exited {keys.returncode}.")
        # Its own session: the terminal's Ctrl-C (SIGINT to the foreground process group) is for
        # the shell, which cancels what it was waiting for; csd stops only when we leave.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            if proc.poll() is not None:
                with open(log_path, errors="replace") as f:
                    raise errors.Internal(f"The embedded csd exited at start (code {proc.returncode}).", f.read()[-2000:])
            try:
                with Client(timeout=0.5, retries=0, connect=connection_file, key=key_file) as probe:
                    probe.hello()
                break
            except errors.Unreachable:
                if time.monotonic() > deadline:
                    raise errors.Unreachable("The embedded csd did not start in time.", f"See {log_path}.")
                time.sleep(0.05)  # waiting for the socket file to appear; bounded by the deadline
        yield connection_file, key_file
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
