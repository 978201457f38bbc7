"""A real Prometheus (tests/prometheus.py: Debian's package) scrapes csd's metrics listener and
answers queries about it through its HTTP API: the harness issue 13's end-to-end test uses.

Here the listener runs standalone in the test process and the test plays csd's serving loop
(publish a `system.show`, observe events and requests): health OK → DEGRADED (a temperature
warning during a run) → OK, a run opened and closed, samples streamed. tests/daemon/
test_faults_e2e.py points the same harness at a real csd started with `--metrics-endpoint`.
"""

from __future__ import annotations

import time

import pytest

from csadmin import errors
from csadmin.shared import protocol
from csadmin.daemon.commands import COMMANDS
from csadmin.daemon.metrics.metric_set import Metrics
from csadmin.daemon.metrics.endpoint import parse
from csadmin.daemon.metrics.listener import MetricsListener
from tests import prometheus
from tests.daemon.test_metrics_dashboard import dashboard, queries, runnable

SHOW = {"serial": "CS2-0001", "state": "ACTIVE", "systemHealth": "OK", "activeExecmode": "WEIGHT_STREAMING",
        "configuredExecmode": "WEIGHT_STREAMING", "runHolder": None, "seq": 1}
HOLDER = {"runId": "run-000001", "owner": "job-42", "mode": "train", "fabric": "PROGRAMMED", "slurmJob": None}
WARNING = [{"name": "temperature-high-warn", "status": "active"}]

pytestmark = pytest.mark.skipif(bool(prometheus.unavailable()), reason=prometheus.unavailable() or "")


@pytest.fixture
def scraped():
    """csd's metric set on a listener at 127.0.0.1 (a free port), and a Prometheus scraping it
    every 0.25 s."""
    metrics = Metrics("1.2.3", COMMANDS, errors.WIRE_CODES)
    metrics.publish(SHOW)
    # Renders are reused for 0.1 s here (1 s in csd): the test reads what it just changed sooner.
    listener = MetricsListener(metrics.registry, parse("0"), render_seconds=0.1)
    listener.start()
    try:
        with prometheus.Prometheus([listener.bound.netloc], scrape_interval=0.25) as prom:
            yield metrics, listener, prom
    finally:
        listener.close()


def test_prometheus_scrapes_the_listener(scraped):
    metrics, listener, prom = scraped
    (target,) = prom.wait_until_up()
    assert target["scrapeUrl"] == listener.bound.url
    assert target["lastError"] == "" and target["labels"]["job"] == "csd"
    (info,) = prom.query("csd_info")
    assert info["metric"]["version"] == "1.2.3" and info["metric"]["serial"] == "CS2-0001"
    assert info["metric"]["instance"] == listener.bound.netloc


def test_health_goes_degraded_and_back_and_the_run_counters_move(scraped):
    metrics, listener, prom = scraped
    prom.wait_until_up()
    started = time.time()
    prom.wait_for('csd_system_health{health="OK"} == 1', what="health OK in Prometheus")

    # A runtime opens a run and streams; a temperature warning comes and goes during it.
    metrics.observe_event({"type": "EventTrainingStarted", "details": {"runId": "run-000001"}})
    metrics.publish({**SHOW, "runHolder": HOLDER, "seq": 2})
    metrics.observe_request("run.open", "ok", 0.002)
    for _ in range(10):
        metrics.observe_samples(500)
        metrics.observe_request("run.stream", "ok", 0.0001)
    metrics.observe_event({"type": "EventSensorTemperatureHighWarn", "details": {"injected": True}})
    metrics.publish({**SHOW, "runHolder": HOLDER, "systemHealth": "DEGRADED", "activeFaults": WARNING, "seq": 3})
    prom.wait_for('csd_system_health{health="DEGRADED"} == 1', what="health DEGRADED in Prometheus")
    prom.wait_for('csd_fault_active{fault="temperature-high-warn"} == 1')
    assert prom.values('csd_fabric_held') == [1.0]

    metrics.observe_event({"type": "EventHealthOk", "details": {"injected": True}})
    metrics.publish({**SHOW, "runHolder": HOLDER, "seq": 4})
    prom.wait_for('csd_system_health{health="OK"} == 1', what="health OK again")
    metrics.observe_event({"type": "EventTrainingCompleted", "details": {"runId": "run-000001"}})
    metrics.observe_request("run.close", "ok", 0.002)
    metrics.publish({**SHOW, "seq": 5})
    prom.wait_for("csd_runs_closed_total == 1", what="the closed run in Prometheus")

    # What Prometheus stored: OK, then DEGRADED, then OK again, in that order.
    assert prom.changes('csd_system_health{health="DEGRADED"}', started) == [0.0, 1.0, 0.0]
    assert prom.changes('csd_system_health{health="OK"}', started) == [1.0, 0.0, 1.0]
    assert prom.values("csd_runs_opened_total") == [1.0]
    assert prom.values("csd_samples_streamed_total") == [5000.0]
    assert prom.values('csd_events_total{type="EventSensorTemperatureHighWarn"}') == [1.0]
    assert prom.values("csd_fabric_held") == [0.0]
    assert prom.values('csd_requests_total{op="run.stream",outcome="ok"}') == [10.0]


def test_every_dashboard_query_runs_on_prometheus(scraped):
    metrics, listener, prom = scraped
    prom.wait_until_up()
    metrics.observe_request("system.show", "ok", 0.0001)
    metrics.observe_samples(10)
    metrics.observe_commit(0.002)
    metrics.publish({**SHOW, "runHolder": HOLDER, "systemHealth": "DEGRADED", "activeFaults": WARNING, "seq": 2})
    # Two scrapes at least, so that rate() and increase() have two points to work with.
    prom.wait_for('count_over_time(csd_system_health_code[1m]) >= 3 and csd_system_health_code == 2')
    for title, expr in queries(dashboard()):
        prom.query(runnable(expr))  # raises with Prometheus' own message on a bad query
    # The state panels show data now.
    for title, expr in queries(dashboard()):
        if title in ("Lifecycle state", "systemHealth", "Active faults", "Execution mode", "Fabric holder",
                     "$instance"):
            assert prom.query(runnable(expr)), f"{title}: {expr} gave nothing"
