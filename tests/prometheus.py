"""A real Prometheus server for tests: Debian's `prometheus` package (which .ci/run installs),
started on loopback with a config file and a data directory of its own in a temp dir, scraping the
targets a test names every `scrape_interval` seconds, queried through its HTTP API
(`/api/v1/query`, `/api/v1/query_range`, `/api/v1/targets`) and stopped by its PID.

    with Prometheus(["127.0.0.1:9464"]) as prom:   # host:port of each /metrics to scrape
        prom.wait_until_up()
        prom.wait_for('csd_system_health{health="DEGRADED"} == 1', what="health DEGRADED")
        prom.changes('csd_system_health{health="DEGRADED"}', start)   # [0.0, 1.0, 0.0]

Where the package is missing, `unavailable()` says so and the tests using it skip with that reason.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from tests.harness import wait_until

BINARY = "prometheus"


def unavailable() -> str | None:
    """Why a Prometheus cannot be started here, or None."""
    if shutil.which(BINARY) is None:
        return "Debian's prometheus package is not installed (apt-get install prometheus; .ci/run does)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """One Prometheus process; `start()` returns once it answers /-/ready."""

    def __init__(self, targets: list[str], scrape_interval: float = 0.25, job: str = "csd"):
        self.targets = list(targets)
        self.scrape_interval = scrape_interval
        self.job = job
        self.dir = tempfile.mkdtemp(prefix="prom-t-")
        self.config_path = os.path.join(self.dir, "prometheus.yml")
        self.log_path = os.path.join(self.dir, "prometheus.log")
        self.proc: subprocess.Popen | None = None
        self.port: int | None = None

    # -- life cycle ---------------------------------------------------------------------------------

    def __enter__(self) -> "Prometheus":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _write_config(self) -> None:
        interval = f"{round(self.scrape_interval * 1000)}ms"
        config = {  # JSON is YAML: no YAML library needed
            "global": {"scrape_interval": interval, "scrape_timeout": interval, "evaluation_interval": interval},
            "scrape_configs": [{"job_name": self.job, "static_configs": [{"targets": self.targets}]}],
        }
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=2)

    def start(self, timeout: float = 60.0) -> "Prometheus":
        self._write_config()
        # A free port may be taken again before Prometheus binds it: then try another.
        for _ in range(5):
            self.port = _free_port()
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(
                    [BINARY, f"--config.file={self.config_path}", f"--storage.tsdb.path={self.dir}/data",
                     f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=info"],
                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.dir,
                )
            if self._wait_ready(timeout):
                return self
            if "address already in use" not in self.log():
                break
        raise AssertionError(f"prometheus did not become ready (exit code {self.proc.returncode}):\n{self.log()}")

    def _wait_ready(self, timeout: float) -> bool:
        """True once /-/ready answers 200; False if the process exited first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"prometheus did not become ready within {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        """SIGTERM by PID (SIGKILL if it does not go within 15 s); the temp dir goes with it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- the HTTP API ---------------------------------------------------------------------------------

    def api(self, path: str, **params) -> dict | list:
        """`data` of a successful answer from /api/v1/`path`; AssertionError with Prometheus' own
        error (e.g. a PromQL parse error) otherwise."""
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            body = json.load(exc)
        if body.get("status") != "success":
            raise AssertionError(f"prometheus refused {path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """The instant vector `expr` gives now (or at `at`): [{"metric": {...}, "value": [t, "v"]}]."""
        data = self.api("query", query=expr, **({"time": at} if at is not None else {}))
        assert data["resultType"] in ("vector", "scalar"), data
        return data["result"] if data["resultType"] == "vector" else [{"metric": {}, "value": data["result"]}]

    def values(self, expr: str) -> list[float]:
        """The values of `expr`'s series now."""
        return [float(r["value"][1]) for r in self.query(expr)]

    def query_range(self, expr: str, start: float, end: float, step: float | None = None) -> list[dict]:
        """The range vector of `expr` from `start` to `end` (unix seconds), one point per `step`
        (default: the scrape interval): [{"metric": {...}, "values": [[t, "v"], …]}]."""
        data = self.api("query_range", query=expr, start=start, end=end, step=step or self.scrape_interval)
        assert data["resultType"] == "matrix", data
        return data["result"]

    def changes(self, expr: str, start: float, end: float | None = None) -> list[float]:
        """The successive distinct values the one series of `expr` took from `start` to `end`
        (default: now), as Prometheus stored them: e.g. [0, 1, 0] for a gauge that went up and
        back down."""
        # A step finer than the scrape interval, so that no stored sample falls between two steps.
        series = self.query_range(expr, start, end if end is not None else time.time(), self.scrape_interval / 4)
        assert len(series) == 1, f"{expr} should be one series, not {len(series)}: {series}"
        points = [float(v) for _, v in series[0]["values"]]
        return [v for i, v in enumerate(points) if i == 0 or v != points[i - 1]]

    def active_targets(self) -> list[dict]:
        return self.api("targets", state="active")["activeTargets"]

    def wait_until_up(self, timeout: float = 60.0) -> list[dict]:
        """Wait until every target was scraped successfully; return them."""
        def up():
            targets = self.active_targets()
            return len(targets) == len(self.targets) and all(t["health"] == "up" for t in targets) and targets
        try:
            return wait_until(up, timeout=timeout, interval=0.1, what="prometheus to scrape every target")
        except AssertionError:
            raise AssertionError(f"targets not up: {self.active_targets()}\n{self.log()}") from None

    def wait_for(self, expr: str, timeout: float = 30.0, what: str | None = None) -> list[dict]:
        """Wait until `expr` gives a non-empty result (a PromQL condition such as `x == 1`)."""
        return wait_until(lambda: self.query(expr), timeout=timeout, interval=0.1, what=what or expr)
