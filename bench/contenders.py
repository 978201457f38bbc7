"""The servers measured: csd (the installed wheel), the bare pyzmq echo with and without CURVE,
the bare PUB+CURVE fan-out server, circus (`circusd`, its ZeroMQ control endpoint) and
supervisor (`supervisord`, XML-RPC on its unix socket). Each runs as its own process, pinned
like every other server, and gives `target()`: what load.py needs to drive it.

csd is reached exactly as a deployment reaches it: keys made by `csd keys`, csd's public key
from the connection file it writes, CURVE DEALER clients with the registered key files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import zmq
import zmq.auth

from machine import cpu_seconds, rss_mb

HERE = os.path.dirname(os.path.abspath(__file__))
READ_REQUEST = {"kind": "csd", "op": "system.show"}
# The echo gets a frame the size of a csd system.show request.
ECHO_PAYLOAD = '{"v":1,"id":"b12345x0-100000","op":"system.show","args":{}}'


class Server:
    """A server process of ours: its pid, CPU, RSS, and a clean stop."""

    name = "server"
    proc: subprocess.Popen | None = None

    def __init__(self, bench):
        self.bench = bench

    @property
    def pid(self) -> int:
        return self.proc.pid

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def cpu(self) -> tuple[float, float]:
        return cpu_seconds(self.pid)

    def _spawn(self, argv, **kw) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CS_", "CSD_", "NOTIFY_SOCKET", "WATCHDOG"))}
        self.proc = subprocess.Popen(self.bench.pinning.server(argv), env=env, **kw)
        self.bench.track(self.proc)
        return self.proc

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.bench.untrack(self.proc)
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _keypair() -> dict:
    public, secret = zmq.curve_keypair()
    return {"public_key": public.decode(), "secret_key": secret.decode()}


class Csd(Server):
    """One csd from the installed wheel, on ipc sockets in its own temp dir, with three keys:
    bench-admin (admin), bench-runtime (operator), bench-viewer (viewer)."""

    KEYS = {"admin": "bench-admin", "runtime": "bench-runtime", "viewer": "bench-viewer"}

    def __init__(self, bench, name: str = "csd", state_dir: str | None = None, keep_events: int | None = None,
                 activate_seconds: float = 0.0, standby_seconds: float = 0.0, log_level: str = "info",
                 extra_args: tuple[str, ...] = ()):
        super().__init__(bench)
        self.extra_args = tuple(extra_args)  # more flags, e.g. ("--metrics-endpoint", "0")
        self.name = name
        self.dir = bench.tmpdir(name)
        self.state_dir = state_dir or os.path.join(self.dir, "state")
        self.endpoint = f"ipc://{self.dir}/csd.sock"
        self.events_endpoint = f"ipc://{self.dir}/csd-events.sock"
        self.connection_file = os.path.join(self.dir, "csd.json")
        self.keep_events = keep_events
        self.timings = (activate_seconds, standby_seconds)
        self.log_level = log_level
        self.key_files = {role: os.path.join(self.dir, f"{name}.key_secret") for role, name in self.KEYS.items()}
        if not os.path.exists(os.path.join(self.state_dir, "keys", "registry.json")):
            self._make_keys()
        else:
            self._copy_keys()

    def _csd(self, *args: str) -> None:
        subprocess.run([self.bench.bin("csd", "csd"), *args], check=True, stdout=subprocess.DEVNULL)

    def _make_keys(self) -> None:
        self._csd("keys", "init", "--state-dir", self.state_dir, "--admin-name", self.KEYS["admin"],
                  "--out", self.key_files["admin"])
        for role, name in (("runtime", "operator"), ("viewer", "viewer")):
            self._csd("keys", "add", self.KEYS[role], "--role", name, "--state-dir", self.state_dir,
                      "--out", self.key_files[role])

    def _copy_keys(self) -> None:
        """A state dir copied from another csd (a prefilled store): use the secrets it keeps."""
        clients = os.path.join(self.state_dir, "keys", "clients")
        for role, name in self.KEYS.items():
            with open(os.path.join(clients, f"{name}.key_secret"), "rb") as src:
                data = src.read()
            fd = os.open(self.key_files[role], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)

    def keep_secrets_in_state_dir(self) -> None:
        """Copy the client secrets into the state dir, so a copy of it (prefill.py) carries them."""
        clients = os.path.join(self.state_dir, "keys", "clients")
        os.makedirs(clients, mode=0o700, exist_ok=True)
        for role, name in self.KEYS.items():
            target = os.path.join(clients, f"{name}.key_secret")
            if not os.path.exists(target):
                with open(self.key_files[role], "rb") as src, \
                        os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as dst:
                    dst.write(src.read())

    def command(self) -> list[str]:
        argv = [self.bench.bin("csd", "csd"), "--config", os.devnull, "--state-dir", self.state_dir,
                "--endpoint", self.endpoint, "--events-endpoint", self.events_endpoint,
                "--connection-file", self.connection_file, "--activate-seconds", str(self.timings[0]),
                "--standby-seconds", str(self.timings[1]), "--log-level", self.log_level]
        if self.keep_events:
            argv += ["--keep-events", str(self.keep_events)]
        return argv + list(self.extra_args)

    def start(self, timeout: float = 300.0) -> float:
        """Start csd; return the seconds from spawn until it answered system.show."""
        with open(os.path.join(self.dir, "csd.log"), "ab") as log:
            t0 = time.monotonic()
            self._spawn(self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = t0 + timeout
        while not self._connection_file_is_mine():  # written right after bind, before serving
            if self.proc.poll() is not None:
                raise RuntimeError(f"csd exited with {self.proc.returncode}; see {self.dir}/csd.log")
            if time.monotonic() > deadline:
                raise RuntimeError(f"csd did not bind within {timeout} s; see {self.dir}/csd.log")
            time.sleep(0.002)
        with self.client(timeout=timeout) as c:
            c.system_show()
        return time.monotonic() - t0

    def _connection_file_is_mine(self) -> bool:
        try:
            with open(self.connection_file) as f:
                return json.load(f).get("pid") == self.proc.pid
        except (OSError, ValueError):
            return False

    def server_key(self) -> str:
        with open(self.connection_file) as f:
            return json.load(f)["server_key"]

    def client(self, key: str = "admin", timeout: float = 30.0, identity: bytes | None = None):
        from csadmin.client import Client

        return Client(connect=self.connection_file, key=self.key_files[key], timeout=timeout, identity=identity)

    def curve(self, key: str) -> dict:
        """The CURVE options of a client using one of our key files (ZeroMQ certificate format)."""
        public, secret = zmq.auth.load_certificate(self.key_files[key])
        return {"server_key": self.server_key(), "public_key": public.decode(), "secret_key": secret.decode()}

    def target(self, op: str = "system.show", args: list[dict] | None = None, key: str = "runtime") -> dict:
        request = {"kind": "csd", "op": op, "args": args or [{}]}
        return {"name": self.name, "pid": self.pid, "tag": "c", "spec": {
            "transport": "zmq", "endpoint": self.endpoint, "curve": self.curve(key),
            "request": request, "warm": READ_REQUEST}}

    def standby(self) -> None:
        """Put the system in STANDBY (where the execution mode may change) and wait for it."""
        with self.client() as c:
            c.system_standby()
            c.wait_for(state="STANDBY", timeout=60)


class Echo(Server):
    """The bare pyzmq ROUTER echo (echo_server.py), with or without CURVE; with `pub`, also the
    PUB socket of the fan-out limit."""

    def __init__(self, bench, curve: bool = True, pub: bool = False):
        super().__init__(bench)
        self.name = ("pub" if pub else "echo") + ("+CURVE" if curve else "")
        d = bench.tmpdir(self.name.replace("+", "-"))
        self.endpoint = f"ipc://{d}/echo.sock"
        self.pub_endpoint = f"ipc://{d}/pub.sock" if pub else None
        self.server_keys = _keypair() if curve else None
        self.client_keys = _keypair() if curve else None

    def start(self) -> "Echo":
        spec = {"endpoint": self.endpoint, "pub_endpoint": self.pub_endpoint,
                "secret_key": self.server_keys["secret_key"] if self.server_keys else None}
        self._spawn([sys.executable, os.path.join(HERE, "echo_server.py")], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True)
        self.proc.stdin.write(json.dumps(spec) + "\n")
        self.proc.stdin.flush()
        if not self.proc.stdout.readline():
            raise RuntimeError(f"{self.name} did not start")
        return self

    def curve(self) -> dict | None:
        if not self.server_keys:
            return None
        return {"server_key": self.server_keys["public_key"], **self.client_keys}

    def target(self) -> dict:
        request = {"kind": "raw", "payload": ECHO_PAYLOAD}
        return {"name": self.name, "pid": self.pid, "spec": {
            "transport": "zmq", "endpoint": self.endpoint, "curve": self.curve(), "request": request}}


class Circus(Server):
    """circusd with one idle watcher; load: its `status` command on the control endpoint
    (a DEALER, JSON frames, as circusctl sends them; circus has no CURVE)."""

    name = "circus"

    def start(self) -> "Circus":
        d = self.bench.tmpdir("circus")
        self.endpoint = f"ipc://{d}/control.sock"
        ini = os.path.join(d, "circus.ini")
        with open(ini, "w") as f:
            f.write(f"[circus]\nendpoint = {self.endpoint}\npubsub_endpoint = ipc://{d}/pubsub.sock\n"
                    "statsd = False\ncheck_delay = 5\n\n"
                    "[watcher:idle]\ncmd = sleep 86400\nnumprocesses = 1\ngraceful_timeout = 1\n")
        with open(os.path.join(d, "circusd.log"), "ab") as log:
            self._spawn([self.bench.bin("circus", "circusd"), ini], stdout=log, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL)
        _wait_answer(self, lambda: _zmq_answers(self.endpoint, b'{"command":"status","properties":{},"id":"w"}'))
        return self

    def target(self) -> dict:
        return {"name": self.name, "pid": self.pid, "spec": {
            "transport": "zmq", "endpoint": self.endpoint, "curve": None,
            "request": {"kind": "circus", "command": "status"}}}


class Supervisor(Server):
    """supervisord with one idle program; load: XML-RPC `supervisor.getProcessInfo("idle")` over
    keep-alive HTTP on its unix socket (supervisorctl's default transport)."""

    name = "supervisor"

    def start(self) -> "Supervisor":
        d = self.bench.tmpdir("supervisor")
        self.socket_path = os.path.join(d, "supervisor.sock")
        conf = os.path.join(d, "supervisord.conf")
        with open(conf, "w") as f:
            f.write(f"[supervisord]\nnodaemon=true\nlogfile={d}/supervisord.log\npidfile={d}/supervisord.pid\n"
                    f"childlogdir={d}\n\n[unix_http_server]\nfile={self.socket_path}\n\n"
                    "[rpcinterface:supervisor]\n"
                    "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n\n"
                    "[program:idle]\ncommand=sleep 86400\nstopwaitsecs=1\n")
        self._spawn([self.bench.bin("supervisor", "supervisord"), "-c", conf], stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        _wait_answer(self, self._answers)
        return self

    def _answers(self) -> bool:
        import xmlrpc.client
        import http.client
        import socket

        class UnixConnection(http.client.HTTPConnection):
            def connect(inner):
                inner.sock = socket.socket(socket.AF_UNIX)
                inner.sock.settimeout(2)
                inner.sock.connect(self.socket_path)

        class Transport(xmlrpc.client.Transport):
            def make_connection(inner, host):
                return UnixConnection("localhost")

        try:
            proxy = xmlrpc.client.ServerProxy("http://localhost", transport=Transport())
            return proxy.supervisor.getState()["statename"] == "RUNNING" and \
                proxy.supervisor.getProcessInfo("idle")["statename"] == "RUNNING"
        except (OSError, xmlrpc.client.Error):
            return False

    def target(self) -> dict:
        return {"name": self.name, "pid": self.pid, "spec": {
            "transport": "http", "endpoint": f"unix:{self.socket_path}",
            "request": {"method": "supervisor.getProcessInfo", "params": ["idle"]}}}


def _zmq_answers(endpoint: str, frame: bytes) -> bool:
    ctx = zmq.Context.instance()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    try:
        s.connect(endpoint)
        s.send(frame)
        return bool(s.poll(500)) and bool(s.recv())
    finally:
        s.close(0)


def _wait_answer(server: Server, answers, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not answers():
        if server.proc.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {server.proc.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.name} did not answer within {timeout} s")
        time.sleep(0.1)
