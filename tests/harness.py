"""Test harness: a real csd subprocess on ipc sockets in a short temp dir, and helpers to wait on
conditions (never on bare sleeps) and to run the real `cs` command."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from csadmin import errors
from csadmin.client import Client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.01, what: str = "condition"):
    """Poll `predicate` until it returns a truthy value; fail with `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class Daemon:
    """One csd process. `start()` returns once it answers `meta.hello`."""

    def __init__(self, activate_seconds=0.05, standby_seconds=0.05, extra_args=(), env=None, log_level="debug"):
        self.dir = tempfile.mkdtemp(prefix="csd-t-")
        self.state_dir = os.path.join(self.dir, "state")
        self.endpoint = f"ipc://{self.dir}/csd.sock"
        self.events_endpoint = f"ipc://{self.dir}/csd-events.sock"
        self.log_path = os.path.join(self.dir, "csd.log")
        self.activate_seconds = activate_seconds
        self.standby_seconds = standby_seconds
        self.extra_args = list(extra_args)
        self.log_level = log_level  # None: no --log-level flag (the config file decides)
        self.extra_env = dict(env or {})  # e.g. NOTIFY_SOCKET for the sd_notify tests
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        # Hermetic: never pick up the machine's /etc/csd/csd.toml unless a test passes --config.
        config = [] if "--config" in self.extra_args else ["--config", os.devnull]
        return [
            sys.executable, "-m", "daemon", "--state-dir", self.state_dir,
            "--endpoint", self.endpoint, "--events-endpoint", self.events_endpoint,
            "--activate-seconds", str(self.activate_seconds), "--standby-seconds", str(self.standby_seconds),
            *(["--log-level", self.log_level] if self.log_level else []), *config, *self.extra_args,
        ]

    def spawn(self) -> "Daemon":
        """Start csd without waiting for it to answer."""
        log = open(self.log_path, "ab")
        env = {**os.environ, **self.extra_env} if self.extra_env else None
        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT, env=env,
        )
        log.close()
        return self

    def start(self, timeout: float = 20.0) -> "Daemon":
        self.spawn()

        def answers():
            if self.proc.poll() is not None:
                raise AssertionError(f"csd exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with self.client(timeout=0.5, retries=0) as c:
                    return c.hello()
            except errors.Unreachable:
                return None

        wait_until(answers, timeout, what="csd to answer meta.hello")
        return self

    def client(self, timeout: float = 10.0, retries: int = 2) -> Client:
        return Client(self.endpoint, timeout=timeout, retries=retries)

    def log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> int:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else 0

    def restart(self, **changes) -> "Daemon":
        self.stop()
        for key, value in changes.items():
            setattr(self, key, value)
        return self.start()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self) -> dict:
        env = dict(os.environ, CS_ENDPOINT=self.endpoint, PYTHONPATH=ROOT)
        return env

    def cs(self, *args: str, input: str | None = None, timeout: float = 60.0) -> subprocess.CompletedProcess:
        """Run the real `cs` one-shot (stdin not a tty) against this daemon."""
        return subprocess.run(
            [sys.executable, "-m", "csadmin", *args], input=input if input is not None else "",
            capture_output=True, text=True, env=self.env(), timeout=timeout, cwd=ROOT,
        )
