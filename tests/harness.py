"""Test harness: a real csd subprocess on ipc sockets in a short temp dir, and helpers to wait on
conditions (never on bare sleeps) and to run the real `cs` command.

Every Daemon gets an `admin` key before it starts (and more with `add_key`); its clients and `cs`
use CURVE with the daemon's connection file, exactly as a real deployment does."""

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
from csadmin.daemon.auth.key_registry import KeyStore

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_wheel(workdir) -> str:
    """Build csadmin's wheel with pip from a copy of the sources (so a stale build/ in the work
    tree cannot leak into it), into `workdir`/dist; return its path."""
    import pathlib

    src = pathlib.Path(workdir) / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), src)
    for folder in ("csadmin", "daemon", "statemachine", "systemd", "slurm", "completions"):
        # symlinks=True: csadmin/daemon and csadmin/statemachine stay links, as in a checkout.
        shutil.copytree(os.path.join(ROOT, folder), src / folder, symlinks=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    dist = pathlib.Path(workdir) / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.iterdir()
    return str(wheel)


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

    def __init__(self, activate_seconds=0.05, standby_seconds=0.05, extra_args=(), env=None, log_level="debug",
                 endpoint=None, events_endpoint=None, nofile=None, file_size_limited=False):
        self.dir = tempfile.mkdtemp(prefix="csd-t-")
        self.state_dir = os.path.join(self.dir, "state")
        self.endpoint = endpoint or f"ipc://{self.dir}/csd.sock"
        self.events_endpoint = events_endpoint or f"ipc://{self.dir}/csd-events.sock"
        self.connection_file = os.path.join(self.dir, "csd.json")
        self.keys = KeyStore(self.state_dir)
        self.admin_key = self.add_key("admin", "admin")
        self.log_path = os.path.join(self.dir, "csd.log")
        self.activate_seconds = activate_seconds
        self.standby_seconds = standby_seconds
        self.extra_args = list(extra_args)
        self.log_level = log_level  # None: no --log-level flag (the config file decides)
        self.extra_env = dict(env or {})  # e.g. NOTIFY_SOCKET for the sd_notify tests
        self.nofile = nofile  # RLIMIT_NOFILE (soft and hard) csd runs with, like `ulimit -n`
        # SIGXFSZ ignored, so that once limit_file_size() is called a write past the limit fails
        # (EFBIG) as on a full disk, instead of the signal killing csd.
        self.file_size_limited = file_size_limited
        self.proc: subprocess.Popen | None = None
        self.launcher = ["-m", "csadmin.daemon"]  # tests/faulty_csd.py swaps in fault injection

    def command(self) -> list[str]:
        # Hermetic: never pick up the machine's /etc/csd/csd.toml unless a test passes --config.
        config = [] if "--config" in self.extra_args else ["--config", os.devnull]
        return [
            sys.executable, *self.launcher, "--state-dir", self.state_dir,
            "--endpoint", self.endpoint, "--events-endpoint", self.events_endpoint,
            "--activate-seconds", str(self.activate_seconds), "--standby-seconds", str(self.standby_seconds),
            "--connection-file", self.connection_file,
            *(["--log-level", self.log_level] if self.log_level else []), *config, *self.extra_args,
        ]

    def spawn(self) -> "Daemon":
        """Start csd without waiting for it to answer."""
        log = open(self.log_path, "ab")
        env = {**os.environ, **self.extra_env} if self.extra_env else None
        def limit():  # in the child, before csd starts
            import resource

            if self.nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (self.nofile, self.nofile))
            if self.file_size_limited:
                signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an ignored signal stays ignored across exec

        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT, env=env,
            preexec_fn=limit if self.nofile is not None or self.file_size_limited else None,
        )
        log.close()
        return self

    def limit_file_size(self, nbytes: int | None) -> None:
        """Let csd write no file beyond `nbytes` (RLIMIT_FSIZE, as if its disk had no room left
        past that), or lift the limit with None. Needs file_size_limited=True."""
        import resource

        assert self.file_size_limited, "start csd with file_size_limited=True"
        hard = resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE)[1]
        resource.prlimit(self.proc.pid, resource.RLIMIT_FSIZE, (hard if nbytes is None else nbytes, hard))

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

    def client(self, timeout: float = 10.0, retries: int = 2, key: str | None = None) -> Client:
        """A client using the connection file and `key` (a secret key file; default: admin's)."""
        return Client(timeout=timeout, retries=retries, connect=self.connection_file, key=key or self.admin_key)

    def key_path(self, name: str) -> str:
        return os.path.join(self.dir, f"{name}.key_secret")

    def add_key(self, name: str, role: str) -> str:
        """Register a client key with `role`; return the path of its secret key file (0600)."""
        self.keys.add(name, role, out=self.key_path(name))
        return self.key_path(name)

    def secure(self, sock, key: str | None = None):
        """Give a raw zmq socket this daemon's server key and a client keypair (admin's by default)."""
        import zmq

        from csadmin.shared.keyfile import read_key_file

        public, secret = read_key_file(key or self.admin_key)
        sock.setsockopt(zmq.CURVE_SERVERKEY, self.connection()["server_key"].encode())
        sock.setsockopt(zmq.CURVE_PUBLICKEY, public.encode())
        sock.setsockopt(zmq.CURVE_SECRETKEY, secret.encode())
        return sock

    def connection(self) -> dict:
        import json

        with open(self.connection_file) as f:
            return json.load(f)

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

    def env(self, key: str | None = None) -> dict:
        """The environment of a `cs` using this daemon, as admin unless `key` says otherwise."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
        env.update(CS_CONNECT=self.connection_file, CS_KEY=key or self.admin_key, PYTHONPATH=ROOT)
        return env

    def cs(self, *args: str, input: str | None = None, timeout: float = 60.0, key: str | None = None) -> subprocess.CompletedProcess:
        """Run the real `cs` one-shot (stdin not a tty) against this daemon."""
        return subprocess.run(
            [sys.executable, "-m", "csadmin", *args], input=input if input is not None else "",
            capture_output=True, text=True, env=self.env(key), timeout=timeout, cwd=ROOT,
        )
