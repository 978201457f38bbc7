"""csd's Prometheus metrics (daemon/metrics/metric_set.py) served by its listener (daemon/metrics/listener.py),
scraped over real HTTP on 127.0.0.1 and read back with prometheus_client's own parser, the way a
Prometheus server reads them. The test plays the serving loop (publish, observe_*); csd's own
wiring is tested end to end in tests/daemon/test_faults_e2e.py."""

from __future__ import annotations

import http.client
import random
import socket
import subprocess
import sys
import threading
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from csadmin import errors
from csadmin.shared import protocol
from csadmin.shared.states import Health
from csadmin.daemon.commands import COMMANDS
from csadmin.daemon.metrics.metric_set import ABORT_CAUSES, DENIAL_REASONS, HEALTH_VALUES, Metrics, View
from csadmin.daemon.metrics.endpoint import MetricsEndpoint, parse
from csadmin.daemon.metrics.listener import MetricsListener
from csadmin.statemachine import faults
from tests.harness import ROOT

SHOW = {  # a system.show result, as csd answers it
    "systemType": "cs2", "serial": "CS2-0042", "state": "ACTIVE", "systemHealth": "OK",
    "activeExecmode": "WEIGHT_STREAMING", "configuredExecmode": "WEIGHT_STREAMING", "pendingUntil": None,
    "runHolder": None, "slurmJob": None, "seq": 17, "time": 1_700_000_000_000,
}
HOLDER = {"runId": "run-000007", "owner": "job-42", "since": 1_700_000_000_000, "mode": "train",
          "fabric": "PROGRAMMED", "slurmJob": "4711"}


def new_metrics() -> Metrics:
    return Metrics("9.9.9", COMMANDS, errors.WIRE_CODES)


def listener_for(metrics: Metrics, endpoint: str = "0", **settings) -> MetricsListener:
    """A listener on 127.0.0.1 (a free port) rendering every scrape afresh, unpaced, unless told."""
    return MetricsListener(metrics.registry, parse(endpoint), **{"render_seconds": 0, "min_interval": 0, **settings})


@pytest.fixture
def served():
    """A metric set and its listener, serving; closed afterwards."""
    metrics = new_metrics()
    with listener_for(metrics) as listener:
        yield metrics, listener


def get(listener: MetricsListener, path: str = "/metrics", method: str = "GET", accept: str | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", listener.bound.port, timeout=10)
    try:
        conn.request(method, path, headers={"Accept": accept} if accept else {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def scrape(listener: MetricsListener) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one scrape, parsed as Prometheus would."""
    status, headers, body = get(listener)
    assert status == 200, body
    assert headers["Content-Type"].startswith("text/plain; version=0.0.4")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body.decode()) for s in family.samples}


def value(samples: dict, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def current(samples: dict, name: str, label: str) -> list[str]:
    """The label values of `name`'s series that are 1 (a state set)."""
    return [dict(k)[label] for (n, k), v in samples.items() if n == name and v == 1]


# -- the setting ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, host, port, url", [
    ("9464", "127.0.0.1", 9464, "http://127.0.0.1:9464/metrics"),
    (" 9464 ", "127.0.0.1", 9464, "http://127.0.0.1:9464/metrics"),
    ("0", "127.0.0.1", 0, "http://127.0.0.1:0/metrics"),
    ("127.0.0.1:9464", "127.0.0.1", 9464, "http://127.0.0.1:9464/metrics"),
    ("localhost:9100", "localhost", 9100, "http://localhost:9100/metrics"),
    ("0.0.0.0:9464", "0.0.0.0", 9464, "http://0.0.0.0:9464/metrics"),
    ("[::1]:9464", "::1", 9464, "http://[::1]:9464/metrics"),
])
def test_the_setting_defaults_to_loopback(text, host, port, url):
    endpoint = parse(text)
    assert (endpoint.host, endpoint.port, endpoint.url) == (host, port, url)


def test_an_empty_setting_means_no_listener():
    assert parse("") is None and parse("  ") is None


@pytest.mark.parametrize("text, says", [
    ("http://127.0.0.1:9464", "is a URL; give only where to listen"),
    ("9464x", "has no port"),
    ("99999", "the port must be a number from 0 to 65535"),
    ("127.0.0.1:70000", "the port must be a number from 0 to 65535"),
    (":9464", "has no port"),
    ("127.0.0.1:", "the port must be a number"),
    ("[::1]", "is not a bracketed IPv6 address and port"),
    ("[nonsense]:9464", "is not a bracketed IPv6 address and port"),
    ("::1:9464", "write an IPv6 address in brackets"),
    ("a b:1", "is not a host name or address"),
    ("\u0663\u0663", "has no port"),  # Arabic-Indic digits are not a port
])
def test_a_bad_setting_says_which_forms_work(text, says):
    with pytest.raises(ValueError) as info:
        parse(text)
    assert says in str(info.value) and '"PORT" (loopback), "HOST:PORT" or "[IPV6]:PORT"' in str(info.value)


# -- what a scrape shows ------------------------------------------------------------------------------------


def test_before_the_loop_publishes_only_csds_own_info_is_shown(served):
    metrics, listener = served
    samples = scrape(listener)
    assert value(samples, "csd_info", version="9.9.9", serial="", system_type="cs2") == 1
    assert not [k for k in samples if k[0].startswith(("csd_lifecycle", "csd_system_health", "csd_fabric"))]


def test_the_device_gauges_follow_what_system_show_says(served):
    metrics, listener = served
    metrics.publish(SHOW)
    samples = scrape(listener)
    assert value(samples, "csd_info", version="9.9.9", serial="CS2-0042", system_type="cs2") == 1
    assert current(samples, "csd_lifecycle_state", "state") == ["ACTIVE"]
    assert current(samples, "csd_system_health", "health") == ["OK"]
    assert value(samples, "csd_system_health_code") == Health.OK.code
    assert current(samples, "csd_active_execmode", "execmode") == ["WEIGHT_STREAMING"]
    assert current(samples, "csd_configured_execmode", "execmode") == ["WEIGHT_STREAMING"]
    assert current(samples, "csd_fabric_state", "fabric") == ["UNPROGRAMMED"]
    assert value(samples, "csd_fabric_held") == 0
    assert not [k for k in samples if k[0] == "csd_fabric_holder_info"]
    assert value(samples, "csd_event_seq") == 17
    # Every health csd can report has a series, so a graph of any of them starts at 0, not at nothing.
    assert {dict(k)["health"] for n, k in samples if n == "csd_system_health"} == set(HEALTH_VALUES)

    metrics.publish({**SHOW, "state": "STANDBY", "systemHealth": "DEGRADED", "configuredExecmode": "PIPELINED",
                     "runHolder": HOLDER, "seq": 18,
                     "activeFaults": [{"name": "temperature-high-warn", "status": "active"},
                                      {"name": "activate-fails", "status": "armed"}]})
    samples = scrape(listener)
    assert current(samples, "csd_lifecycle_state", "state") == ["STANDBY"]
    assert current(samples, "csd_system_health", "health") == ["DEGRADED"]
    assert value(samples, "csd_system_health_code") == 2
    assert current(samples, "csd_configured_execmode", "execmode") == ["PIPELINED"]
    assert current(samples, "csd_fabric_state", "fabric") == ["PROGRAMMED"]
    assert value(samples, "csd_fabric_held") == 1
    assert value(samples, "csd_fabric_holder_info", run_id="run-000007", owner="job-42", mode="train",
                 slurm_job="4711") == 1
    assert current(samples, "csd_fault_active", "fault") == ["temperature-high-warn"]
    assert value(samples, "csd_fault_active", fault="temperature-high-warn", health="DEGRADED", effect="warning") == 1
    assert current(samples, "csd_fault_armed", "fault") == ["activate-fails"]
    assert {dict(k)["fault"] for n, k in samples if n == "csd_fault_active"} == set(faults.BY_NAME)
    assert value(samples, "csd_event_seq") == 18


def test_a_value_nobody_foresaw_is_shown_rather_than_hidden(served):
    metrics, listener = served
    metrics.publish({**SHOW, "systemHealth": "UPDATING_SW"})
    samples = scrape(listener)
    assert current(samples, "csd_system_health", "health") == ["UPDATING_SW"]
    assert value(samples, "csd_system_health_code") == 13


def test_requests_are_counted_and_timed_by_op_and_outcome(served):
    metrics, listener = served
    for _ in range(3):
        metrics.observe_request("system.show", "ok", 0.00008)
    metrics.observe_request("system.standby", "BUSY", 0.002)
    metrics.observe_request("run.stream", "replayed", 0.0001)
    samples = scrape(listener)
    assert value(samples, "csd_requests_total", op="system.show", outcome="ok") == 3
    assert value(samples, "csd_requests_total", op="system.standby", outcome="BUSY") == 1
    assert value(samples, "csd_requests_total", op="run.stream", outcome="replayed") == 1
    assert value(samples, "csd_request_duration_seconds_count", op="system.show", outcome="ok") == 3
    assert value(samples, "csd_request_duration_seconds_bucket", op="system.show", outcome="ok", le="5e-05") == 0
    assert value(samples, "csd_request_duration_seconds_bucket", op="system.show", outcome="ok", le="0.0001") == 3
    assert value(samples, "csd_request_duration_seconds_bucket", op="system.standby", outcome="BUSY", le="0.001") == 0
    assert value(samples, "csd_request_duration_seconds_bucket", op="system.standby", outcome="BUSY", le="0.0025") == 1
    assert value(samples, "csd_request_duration_seconds_sum", op="system.standby", outcome="BUSY") == pytest.approx(0.002)


def test_what_hostile_clients_send_cannot_grow_the_series(served):
    metrics, listener = served
    rng = random.Random(13)
    junk = [None, 7, 1.5, {"op": 1}, ["x"], "", "system.show\x00", "x" * 10_000]
    for i in range(20_000):
        op = rng.choice([*COMMANDS, *junk, f"op-{i}"])
        outcome = rng.choice(["ok", "replayed", *errors.WIRE_CODES, f"code-{i}", None, {"x": 1}])
        metrics.observe_request(op, outcome, rng.random() / 100)
    samples = scrape(listener)
    series = {k for k in samples if k[0] == "csd_requests_total"}
    ops = {dict(k)["op"] for _, k in series}
    outcomes = {dict(k)["outcome"] for _, k in series}
    assert ops <= set(COMMANDS) | {"other"} and "other" in ops
    assert outcomes <= set(errors.WIRE_CODES) | {"ok", "replayed", "other"} and "other" in outcomes
    assert sum(v for (n, _), v in samples.items() if n == "csd_requests_total") == 20_000
    # The loop's lookup cache holds closed-set labels only (no hostile key was kept).
    assert all(isinstance(op, str) and (op in COMMANDS or op == "other") for op, _ in metrics._request_children)


def test_runs_and_events_are_counted_from_the_events_the_loop_publishes(served):
    metrics, listener = served
    for event in [
        {"type": "EventTrainingStarted", "details": {"runId": "run-1"}},
        {"type": "EventTrainingCompleted", "details": {"runId": "run-1"}},
        {"type": "EventTrainingStarted", "details": {"runId": "run-2"}},
        {"type": "EventTrainingAborted", "details": {"runId": "run-2", "cause": "fault", "reason": "psu-hardware-error"}},
        {"type": "EventTrainingStarted", "details": {"runId": "run-3"}},
        {"type": "EventTrainingAborted", "details": {"runId": "run-3", "reason": "aborted by an admin (alice)"}},
        {"type": "EventTrainingAborted", "details": {"cause": "made-up"}},
        {"type": "EventPsuHardwareError", "details": {"injected": True}},
        {"type": "EventNobodyKnows", "details": {}},
    ]:
        metrics.observe_event(event)
    samples = scrape(listener)
    assert value(samples, "csd_runs_opened_total") == 3
    assert value(samples, "csd_runs_closed_total") == 1
    assert value(samples, "csd_runs_aborted_total", cause="fault") == 1
    assert value(samples, "csd_runs_aborted_total", cause="other") == 2  # no cause, or one outside the set
    assert {dict(k)["cause"] for n, k in samples if n == "csd_runs_aborted_total"} == set(ABORT_CAUSES)
    assert value(samples, "csd_events_total", type="EventTrainingStarted") == 3
    assert value(samples, "csd_events_total", type="EventPsuHardwareError") == 1
    assert value(samples, "csd_events_total", type="other") == 1


def test_samples_denials_and_commits(served):
    metrics, listener = served
    metrics.observe_samples(1000)
    metrics.observe_samples(24)
    metrics.observe_denial("role")
    metrics.observe_denial("role")
    metrics.observe_denial("some key name")
    metrics.observe_commit(0.003)
    samples = scrape(listener)
    assert value(samples, "csd_samples_streamed_total") == 1024
    assert value(samples, "csd_denials_total", reason="role") == 2
    assert value(samples, "csd_denials_total", reason="other") == 1
    assert {dict(k)["reason"] for n, k in samples if n == "csd_denials_total"} == set(DENIAL_REASONS)
    assert value(samples, "csd_commit_duration_seconds_count") == 1
    assert value(samples, "csd_commit_duration_seconds_bucket", le="0.0025") == 0
    assert value(samples, "csd_commit_duration_seconds_bucket", le="0.005") == 1


# Label names a scrape may carry, each for something `system show`, `runs list` or `events show`
# tell a viewer, or a closed set of csd's own (ops, outcomes, causes, reasons, event types).
VIEWER_LABELS = {"version", "serial", "system_type", "state", "health", "execmode", "fabric", "run_id", "owner",
                 "mode", "slurm_job", "fault", "effect", "op", "outcome", "reason", "cause", "type", "le"}


def test_a_scrape_shows_nothing_a_viewer_could_not_read(served):
    metrics, listener = served
    # A show result with more in it than a viewer's (as if a later csd added private fields).
    metrics.publish({**SHOW, "runHolder": {**HOLDER, "client": "alice/3f9a", "publicKey": "rq:SECRETKEY"},
                     "auditTail": ["alice: system.standby"], "connectionFile": "/run/csd/csd.json"})
    metrics.observe_request("system.standby", "PERMISSION_DENIED", 0.001)
    metrics.observe_denial("alice")  # a caller's name where a reason belongs is not shown
    metrics.observe_event({"type": "EventTrainingAborted", "details": {"reason": "aborted by an admin (alice)"}})
    status, _, body = get(listener)
    text = body.decode()
    for secret in ("alice", "3f9a", "SECRETKEY", "audit", "/run/csd"):
        assert secret not in text
    samples = scrape(listener)
    assert {name for _, labels in samples for name, _ in labels} <= VIEWER_LABELS
    assert {n.split("_bucket")[0].removesuffix("_count").removesuffix("_sum") for n, _ in samples} == {
        "csd_info", "csd_lifecycle_state", "csd_system_health", "csd_system_health_code", "csd_active_execmode",
        "csd_configured_execmode", "csd_fabric_state", "csd_fabric_held", "csd_fabric_holder_info",
        "csd_fault_active", "csd_fault_armed", "csd_event_seq", "csd_requests_total", "csd_request_duration_seconds",
        "csd_denials_total", "csd_runs_opened_total", "csd_runs_closed_total", "csd_runs_aborted_total",
        "csd_samples_streamed_total", "csd_events_total", "csd_commit_duration_seconds"}
    assert not [k for k in samples if k[0].endswith("_created")]  # no doubled series


# -- the listener as an HTTP server --------------------------------------------------------------------------


def test_openmetrics_for_a_scraper_that_asks_for_it(served):
    metrics, listener = served
    metrics.publish(SHOW)
    status, headers, body = get(listener, accept="application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert status == 200 and headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.endswith(b"# EOF\n") and b'csd_lifecycle_state{state="ACTIVE"} 1.0' in body


def test_head_index_unknown_paths_and_methods(served):
    metrics, listener = served
    status, headers, body = get(listener, method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) > 0
    assert get(listener, "/")[0::2] == (200, b"csd: Prometheus metrics at /metrics\n")
    assert get(listener, "/metrics?name[]=csd_info")[0] == 200
    status, _, body = get(listener, "/admin")
    assert status == 404 and b"/metrics" in body
    assert get(listener, method="POST")[0] == 501
    assert get(listener, method="DELETE")[0] == 501


def test_a_collector_that_fails_gets_a_500_and_the_listener_carries_on():
    metrics = new_metrics()
    errors = []
    with listener_for(metrics, on_error=errors.append) as listener:
        class Broken:
            def collect(self):
                raise RuntimeError("a bug in a collector")

        broken = Broken()
        metrics.registry.register(broken)
        status, _, body = get(listener)
        assert status == 500 and b"its log says why" in body
        assert [str(e) for e in errors] == ["a bug in a collector"]
        metrics.registry.unregister(broken)
        assert get(listener)[0] == 200


def test_a_page_is_rendered_at_most_once_per_render_period():
    metrics = new_metrics()
    now = [100.0]  # the listener's clock, in seconds, moved by the test
    with listener_for(metrics, render_seconds=1.0, clock=lambda: now[0]) as listener:
        metrics.observe_samples(1)
        first = scrape(listener)
        metrics.observe_samples(1)
        now[0] += 0.999
        assert scrape(listener) == first and listener.renders == 1  # the cached page, within the period
        now[0] += 0.001
        assert value(scrape(listener), "csd_samples_streamed_total") == 2 and listener.renders == 2
        # Each content type is cached apart: an OpenMetrics scraper gets its own render.
        assert get(listener, accept="application/openmetrics-text;version=1.0.0")[0] == 200
        assert listener.renders == 3
        assert get(listener, accept="application/openmetrics-text;version=1.0.0")[0] == 200
        assert listener.renders == 3


def test_a_scrape_storm_is_paced():
    with listener_for(new_metrics(), min_interval=0.1) as listener:
        started = time.monotonic()
        for _ in range(5):
            assert get(listener)[0] == 200
        assert time.monotonic() - started >= 0.4  # 5 requests, each at least 0.1 s after the one before


def test_a_silent_connection_is_dropped_and_the_next_scraper_served():
    with listener_for(new_metrics(), timeout=0.5) as listener, \
            socket.create_connection(("127.0.0.1", listener.bound.port)) as silent:
        started = time.monotonic()
        assert get(listener)[0] == 200  # served at once: the silent one holds a place, not the thread
        assert silent.recv(100) == b""  # ... and is closed without an answer when its time is up
        assert time.monotonic() - started < 10


def test_close_releases_the_port_and_ends_the_thread():
    metrics = new_metrics()
    listener = MetricsListener(metrics.registry, parse("0"))
    listener.start()
    port = listener.bound.port
    listener.close()
    listener.close()  # twice is fine
    assert not [t for t in threading.enumerate() if t.name == "csd-metrics"]
    with socket.create_server(("127.0.0.1", port)):  # free again
        pass
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


def test_a_taken_port_fails_the_start():
    with socket.create_server(("127.0.0.1", 0)) as taken:
        listener = MetricsListener(new_metrics().registry, MetricsEndpoint("127.0.0.1", taken.getsockname()[1]))
        with pytest.raises(OSError):
            listener.start()


def test_ipv6_loopback():
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    listener = listener_for(new_metrics(), "[::1]:0")
    try:
        listener.start()
    except OSError as exc:
        pytest.skip(f"cannot bind ::1 here: {exc}")
    try:
        conn = http.client.HTTPConnection("::1", listener.bound.port, timeout=10)
        conn.request("GET", "/metrics")
        assert conn.getresponse().status == 200
        conn.close()
        assert listener.bound.netloc == f"[::1]:{listener.bound.port}"
    finally:
        listener.close()


# -- threads: the loop changes, the listener reads -------------------------------------------------------------


def test_every_scrape_sees_one_consistent_state_while_the_loop_changes_it():
    """The loop publishes views and counts as fast as it can while scrapes run: each scrape must
    show exactly one state, one health, and a holder exactly when the fabric is held."""
    metrics = new_metrics()
    listener = listener_for(metrics)
    listener.start()
    stop = threading.Event()
    shows = [
        SHOW,
        {**SHOW, "state": "PENDING_STANDBY", "systemHealth": "PENDING_STANDBY"},
        {**SHOW, "state": "STANDBY", "systemHealth": "STANDBY"},
        {**SHOW, "runHolder": HOLDER, "systemHealth": "DEGRADED",
         "activeFaults": [{"name": "flow-rate-low-warn", "status": "active"}]},
    ]

    def loop():
        i = 0
        while not stop.is_set():
            metrics.publish({**shows[i % len(shows)], "seq": i})
            metrics.observe_request("system.show", "ok", 0.0001)
            metrics.observe_event({"type": "EventTrainingStarted"})
            i += 1

    looping = threading.Thread(target=loop)
    looping.start()
    try:
        for _ in range(40):
            samples = scrape(listener)
            assert len(current(samples, "csd_lifecycle_state", "state")) == 1
            (health,) = current(samples, "csd_system_health", "health")
            held = value(samples, "csd_fabric_held")
            holders = [k for k in samples if k[0] == "csd_fabric_holder_info"]
            assert len(holders) == held
            assert (health == "DEGRADED") == (held == 1) == (current(samples, "csd_fault_active", "fault") ==
                                                            ["flow-rate-low-warn"])
    finally:
        stop.set()
        looping.join()
        listener.close()


def test_view_is_immutable():
    view = View.of(SHOW)
    with pytest.raises(AttributeError):
        view.state = "STANDBY"


# -- who imports prometheus_client ------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["csadmin.client", "csadmin.main", "csadmin.daemon.process.config", "csadmin.daemon.metrics.endpoint"])
def test_the_client_one_shot_and_config_paths_do_not_import_prometheus_client(module):
    code = f"import sys, {module}; print('prometheus_client' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "False"
