"""The Grafana dashboard in docs/grafana/ asks only for metrics csd defines (daemon/metrics/metric_set.py),
and shows what the issue asks for: a state timeline, health, samples/s, request latency.
(tests/daemon/test_metrics_prometheus.py runs its queries on a real Prometheus.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from csadmin import errors
from csadmin.shared import protocol
from csadmin.daemon.commands import COMMANDS
from csadmin.daemon.metrics.metric_set import Metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "csd-dashboard.json"
# Grafana's variables, and what a test puts in their place to run a query.
VARIABLES = {"$__rate_interval": "1m", "$__range": "5m", "$instance": ".*"}


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def queries(board: dict) -> list[tuple[str, str]]:
    """(panel title, expr) of every query, the template variables' included."""
    found = [(p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]]
    for variable in board["templating"]["list"]:
        if variable["type"] == "query":
            found.append((f"${variable['name']}", variable["query"]["query"]))
    return found


def runnable(expr: str) -> str:
    """`expr` with Grafana's variables replaced, as Prometheus can run it."""
    for name, value in VARIABLES.items():
        expr = expr.replace(name, value)
    return re.sub(r"^label_values\((\w+), \w+\)$", r"\1", expr)


def defined_series() -> set[str]:
    """Every sample name csd's metric set renders, with every metric given a value."""
    metrics = Metrics("1.0", COMMANDS, errors.WIRE_CODES)
    metrics.publish({"serial": "CS2-0001", "state": "ACTIVE", "systemHealth": "OK", "activeExecmode": "PIPELINED",
                     "configuredExecmode": "PIPELINED", "seq": 1,
                     "runHolder": {"runId": "run-1", "owner": "o", "mode": "train", "fabric": "PROGRAMMED"}})
    metrics.observe_request("system.show", "ok", 0.001)
    metrics.observe_event({"type": "EventTrainingStarted"})
    metrics.observe_commit(0.001)
    text = generate_latest(metrics.registry).decode()
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_dashboard_is_valid_json_with_unique_panels_on_the_grid():
    board = dashboard()
    assert board["title"] and board["uid"] == "csd-cs2" and board["schemaVersion"] >= 36
    ids = [p["id"] for p in board["panels"]]
    assert len(set(ids)) == len(ids)
    for p in board["panels"]:
        grid = p["gridPos"]
        assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24 and grid["h"] > 0, p["title"]
        assert p["targets"] and all(t["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
                                    for t in p["targets"])
        assert len({t["refId"] for t in p["targets"]}) == len(p["targets"])
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource", "instance"]


def test_every_query_names_only_metrics_csd_defines():
    series = defined_series()
    for title, expr in queries(dashboard()):
        text = re.sub(r'"[^"]*"', '""', runnable(expr))  # label values are not metric names
        names = {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", text) if w.startswith("csd_")}
        assert names, f"{title}: {expr} names no csd metric"
        assert names <= series, f"{title}: {sorted(names - series)} are not metrics csd defines"


def test_the_dashboard_shows_what_the_issue_asks_for():
    panels = {p["title"]: p for p in dashboard()["panels"]}
    exprs = {title: " ".join(t["expr"] for t in p["targets"]) for title, p in panels.items()}
    assert panels["Lifecycle state"]["type"] == "state-timeline" and "csd_lifecycle_state" in exprs["Lifecycle state"]
    assert panels["systemHealth"]["type"] == "state-timeline" and "csd_system_health_code" in exprs["systemHealth"]
    assert "rate(csd_samples_streamed_total" in exprs["Samples streamed per second"]
    assert "histogram_quantile(0.99" in exprs["Request latency (p50, p99) by operation"]
    assert "csd_request_duration_seconds_bucket" in exprs["Request latency (p50, p99) by operation"]


def test_the_health_timeline_names_every_code_csd_reports():
    from csadmin.daemon.metrics.metric_set import HEALTH_VALUES
    from csadmin.shared.states import Health

    panel = next(p for p in dashboard()["panels"] if p["title"] == "systemHealth")
    (mapping,) = panel["fieldConfig"]["defaults"]["mappings"]
    shown = {int(code): option["text"] for code, option in mapping["options"].items()}
    for health in HEALTH_VALUES:
        assert shown[Health(health).code] == health
