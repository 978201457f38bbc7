"""Issue 13's "done when": a real csd with its metrics listener, a real Prometheus scraping it,
faults injected by hand and by a scenario file, and runtimes living through them.

1. Prometheus sees health go DEGRADED and back while a run streams, and a critical fault abort the
   run (RunAborted naming it); its counters match what the runtime and the admin did.
2. examples/fault_tolerant_loop.py, against csd started with examples/faults/warm-then-psu.toml,
   streams through the DEGRADED period and resumes in run 2; at sampled moments `cs system show`,
   `cs events show`, the shell's toolbar text and Prometheus agree on health.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

from csadmin import errors
from csadmin.shell.live import LiveState
from csadmin.shell.toolbar import toolbar_text
from tests import prometheus
from tests.daemon.test_metrics_dashboard import dashboard, queries, runnable
from tests.harness import ROOT, Daemon, wait_until

pytestmark = pytest.mark.skipif(bool(prometheus.unavailable()), reason=prometheus.unavailable() or "")

SCENARIO = os.path.join(ROOT, "examples", "faults", "warm-then-psu.toml")
PROGRAM = {"fingerprint": "sha256:e2e", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
           "compile_time": 1.0, "est_samples_per_sec": 1000.0, "size_bytes": 1000}


def metrics_url(daemon: Daemon) -> str:
    with open(daemon.connection_file) as f:
        return json.load(f)["metrics_url"]


@pytest.fixture
def scraped(request):
    """csd with its metrics listener on a free loopback port (`--metrics-endpoint 0`; the URL is
    in csd.json) and a Prometheus scraping it every 0.25 s."""
    daemon = Daemon(extra_args=["--metrics-endpoint", "0", *getattr(request, "param", ())]).start()
    try:
        netloc = metrics_url(daemon).split("/")[2]
        with prometheus.Prometheus([netloc], scrape_interval=0.25) as prom:
            prom.wait_until_up()
            yield daemon, prom
    finally:
        daemon.stop()


def test_csd_writes_where_its_metrics_are_and_serves_them(scraped):
    daemon, prom = scraped
    url = metrics_url(daemon)
    assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
    body = urllib.request.urlopen(url, timeout=10).read().decode()
    assert 'csd_system_health{health="OK"} 1.0' in body and 'csd_lifecycle_state{state="ACTIVE"} 1.0' in body
    (target,) = prom.active_targets()
    assert target["health"] == "up" and target["scrapeUrl"] == url
    # A change that emits no event (a transition fault armed) still reaches the metrics.
    with daemon.client() as c:
        c.fault_inject("activate-fails")
    prom.wait_for('csd_fault_armed{fault="activate-fails"} == 1', what="the armed fault in Prometheus")


def test_prometheus_sees_a_warning_come_and_go_and_a_critical_fault_abort_a_run(scraped):
    daemon, prom = scraped
    started = time.time()
    prom.wait_for('csd_system_health{health="OK"} == 1', what="health OK in Prometheus")
    with daemon.client() as admin, daemon.client(key=daemon.add_key("runtime", "operator")) as runtime:
        run = runtime.open_run(owner="e2e")
        run.program(PROGRAM)
        sent = 0
        for _ in range(5):
            run.stream(100)
            sent += 100
        # A warning for 3 s: the run carries on; Prometheus sees DEGRADED, then OK.
        assert admin.fault_inject("temperature-high-warn", for_seconds=3)["systemHealth"] == "DEGRADED"
        prom.wait_for('csd_system_health{health="DEGRADED"} == 1', what="health DEGRADED in Prometheus")
        prom.wait_for('csd_fault_active{fault="temperature-high-warn"} == 1')
        run.stream(100)
        sent += 100
        assert admin.wait_for(health="OK", timeout=30)["systemHealth"] == "OK"
        prom.wait_for('csd_system_health{health="OK"} == 1', what="health OK again")

        # A PSU error: the run is aborted, naming it; new runs are refused until it clears.
        admin.fault_inject("psu-hardware-error")
        with pytest.raises(errors.RunAborted) as aborted:
            run.stream(100)
        assert aborted.value.fault == "psu-hardware-error" and "psu-hardware-error" in aborted.value.message
        with pytest.raises(errors.FaultActive) as refused:
            runtime.open_run(owner="e2e")
        assert refused.value.fault == "psu-hardware-error" and refused.value.exit_code == errors.EXIT_STATE
        prom.wait_for('csd_system_health{health="HARDWARE_ERROR"} == 1')
        prom.wait_for('csd_runs_aborted_total{cause="fault"} == 1')
        admin.fault_clear("psu-hardware-error")
        with runtime.open_run(owner="e2e") as second:
            second.program(PROGRAM)
            second.stream(50)
            sent += 50

    prom.wait_for("csd_runs_opened_total == 2 and csd_runs_closed_total == 1")
    prom.wait_for(f"csd_samples_streamed_total == {sent}")
    assert prom.changes('csd_system_health{health="DEGRADED"}', started) == [0.0, 1.0, 0.0]
    assert prom.values('csd_requests_total{op="system.fault.inject",outcome="ok"}') == [2.0]
    assert prom.values('csd_requests_total{op="run.open",outcome="FAULT_ACTIVE"}') == [1.0]
    assert prom.values('csd_events_total{type="EventPsuHardwareError"}') == [1.0]
    assert prom.values("csd_commit_duration_seconds_count")[0] > 0
    for title, expr in queries(dashboard()):  # the dashboard works against a real csd
        prom.query(runnable(expr))


def test_a_refused_key_is_counted_as_a_denial(scraped):
    daemon, prom = scraped
    viewer = daemon.add_key("viewer", "viewer")
    with daemon.client(key=viewer, retries=0) as c, pytest.raises(errors.PermissionDenied):
        c.fault_inject("pump-missing")
    prom.wait_for('csd_denials_total{reason="role"} == 1')


def health_in_events(daemon: Daemon) -> str | None:
    """The systemHealth the newest fault event announced, read with `cs events show`."""
    shown = daemon.cs("events", "show", "--output-format", "json")
    assert shown.returncode == 0, shown.stderr
    said = [e["details"]["systemHealth"] for e in json.loads(shown.stdout)["events"]
            if e["details"].get("injected") and "systemHealth" in e["details"]]
    return said[-1] if said else None


def agree_on(daemon: Daemon, prom, health: str) -> None:
    """`cs system show`, the events, the shell's toolbar and Prometheus all say `health`."""
    shown = daemon.cs("system", "show", "--output-format", "json")
    assert shown.returncode == 0, shown.stderr
    snap = json.loads(shown.stdout)
    assert snap["systemHealth"] == health
    text = daemon.cs("system", "show").stdout
    assert any(line.split(":")[0].strip() == "systemHealth" and line.endswith(health) for line in text.splitlines())
    assert any(line.startswith("Fault") and "(active, " + health in line for line in text.splitlines()), text
    assert health_in_events(daemon) == health
    live = LiveState(daemon.endpoint)
    live.update(snap)
    assert f"systemHealth {health} (1 fault)" in toolbar_text(live)
    prom.wait_for(f'csd_system_health{{health="{health}"}} == 1', what=f"Prometheus to say {health}")


@pytest.mark.parametrize("scraped", [("--faults", SCENARIO)], indirect=True)
def test_the_example_runtime_survives_the_scenario_and_every_view_agrees_on_health(scraped):
    daemon, prom = scraped
    env = daemon.env(daemon.add_key("trainer", "operator"))
    example = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "examples", "fault_tolerant_loop.py"), "--samples", "40000"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
    )
    try:
        with daemon.client() as c:
            wait_until(lambda: c.system_show()["systemHealth"] == "DEGRADED", 60, what="the scenario's warning")
            agree_on(daemon, prom, "DEGRADED")
            wait_until(lambda: c.system_show()["systemHealth"] == "HARDWARE_ERROR", 60, what="the PSU error")
            agree_on(daemon, prom, "HARDWARE_ERROR")
        out, _ = example.communicate(timeout=120)
    finally:
        if example.poll() is None:
            example.kill()
            example.wait()
    assert example.returncode == 0, out
    lines = out.splitlines()
    degraded = next(i for i, line in enumerate(lines) if "EventSensorTemperatureHighWarn (injected)" in line)
    aborted = next(i for i, line in enumerate(lines) if "aborted by fault psu-hardware-error" in line)
    resumed = next(i for i, line in enumerate(lines) if line.split(" ", 1)[1].startswith("run 2: streaming from"))
    assert "systemHealth DEGRADED" in lines[degraded]
    assert any("EventHealthOk (injected)" in line for line in lines[degraded:aborted])  # it streamed through
    assert degraded < aborted < resumed and not lines[resumed].endswith("sample 0")
    assert lines[-1].endswith("done: 40000 samples in 2 run(s)")
    prom.wait_for("csd_runs_opened_total == 2 and csd_samples_streamed_total == 40000")
    prom.wait_for('csd_runs_aborted_total{cause="fault"} == 1')
    prom.wait_for('csd_system_health{health="OK"} == 1')
