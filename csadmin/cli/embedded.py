"""`cs --embedded`: a private csd in a temporary directory, for demos and trying things out."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from .. import errors
from ..client import Client
from . import lifeline


@contextlib.contextmanager
def embedded_daemon(activate_seconds: float = 5.0, standby_seconds: float = 3.0, startup_timeout: float = 20.0):
    """Start csd on ipc sockets in a temp dir with a fresh admin key, wait until it answers,
    yield (connection file, admin's secret key file), stop it. csd runs in its own session, so
    Ctrl-C at the terminal never reaches it, under a keeper that stops it and removes the temp
    dir however this process ends (csadmin/cli/lifeline.py)."""
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
        # csd runs under a keeper (cli/lifeline.py) tied to us by a socketpair whose other end
        # only this process holds: however we end (Ctrl-D, SIGHUP, SIGKILL), the kernel closes
        # it, and the keeper stops csd and removes `tmp`. Its own session: the terminal's Ctrl-C
        # (SIGINT to the foreground process group) is for the shell, never for csd.
        ours, theirs = socket.socketpair()
        try:
            keeper = subprocess.Popen(
                [sys.executable, "-m", "csadmin.cli.lifeline", str(theirs.fileno()), tmp, log_path, "--", *cmd],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            theirs.close()
    try:
        deadline = time.monotonic() + startup_timeout
        while True:
            exited = _csd_exit(ours)
            if exited is not None:
                with open(log_path, errors="replace") as f:
                    raise errors.Internal(f"The embedded csd exited at start (code {exited}).", f.read()[-2000:])
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
        ours.close()  # the keeper reads EOF: it stops csd and removes tmp
        try:
            keeper.wait(timeout=lifeline.STOP_SECONDS + 5)
        except subprocess.TimeoutExpired:
            keeper.kill()
            keeper.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def _csd_exit(lifeline_end: socket.socket) -> int | None:
    """csd's exit code if the keeper has said it exited, else None (without waiting)."""
    if not select.select([lifeline_end], [], [], 0)[0]:
        return None
    said = lifeline_end.recv(4096).decode(errors="replace").split()
    return int(said[1]) if len(said) == 2 and said[0] == "exited" else -1
