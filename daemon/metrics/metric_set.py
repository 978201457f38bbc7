"""csd's Prometheus metrics: the metric set, kept with prometheus_client (no hand-written
exposition format). The HTTP listener that serves it is daemon/metrics/listener.py.

Two threads, no shared model. The serving loop owns the device; prometheus_client answers a
scrape from the listener's thread, calling the collectors of our registry there. So a scrape
never reads the model:
- the device's gauges come from a `View`, an immutable summary of what `system.show` says
  (so nothing a viewer could not read), which the loop publishes with one attribute assignment
  when the state changed; a scrape reads whichever View is current, whole;
- counters and histograms are prometheus_client's own (each value behind its lock), changed by
  the loop only, through the `observe_*` methods, and read by the scrape.
A request costs the loop about 1 µs here (a dict lookup, an increment, an observation); the
listener bounds what scrapes cost it (its docstring, bench/RESULTS.md).

Labels come from closed sets only — the ops csd knows, the wire's error codes, the catalogued
event types, the causes and reasons listed here, the values of `system.show` — so no client can
grow the number of series, and no key name, session, address, argument or free-text reason is
ever exposed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.core import GaugeMetricFamily

from csadmin.statemachine import faults
from csadmin.statemachine.events import CATALOG
from csadmin.statemachine.lifecycle_rules import HEALTH
from csadmin.statemachine.run import Fabric
from csadmin.shared.states import ExecMode, Health, Lifecycle

# Seconds. A read takes ~0.1 ms in csd, a durable change ~1–5 ms (an fsync).
REQUEST_BUCKETS = (0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

# Why a run was aborted: the `cause` an EventTrainingAborted carries in its details.
ABORT_CAUSES = ("lease_expired", "time_limit", "standby_forced", "admin", "runtime", "daemon_restarted", "slurm_job_ended",
                "fault", "other")
# Why a request or a connection was refused before anything looked at it.
DENIAL_REASONS = ("unregistered_key", "role", "authenticator_down", "handshake", "other")
OTHER = "other"  # the label of anything outside its closed set

# Every systemHealth csd can report: its lifecycle's values and its faults', least severe first.
_REPORTED = {*HEALTH.values(), *(f.health for f in faults.FAULTS)}
HEALTH_VALUES = tuple(h.value for h in Health if h in _REPORTED)
_CODES = {h.value: h.code for h in Health}  # a value read off `system.show` -> its code


@dataclass(frozen=True)
class View:
    """What the device's gauges show, taken from a `system.show` result (viewer-readable).
    `holder` is the run holding the fabric as label pairs (None: free); `faults` the
    (name, status) of each fault present, status "active" or "armed"."""

    serial: str
    state: str
    health: str
    active_execmode: str
    configured_execmode: str
    fabric: str
    holder: tuple[tuple[str, str], ...] | None
    faults: tuple[tuple[str, str], ...]
    seq: int

    @classmethod
    def of(cls, show: dict) -> "View":
        holder = show.get("runHolder")
        return cls(
            serial=str(show["serial"]),
            state=str(show["state"]),
            health=str(show["systemHealth"]),
            active_execmode=str(show["activeExecmode"]),
            configured_execmode=str(show["configuredExecmode"]),
            fabric=str(holder["fabric"]) if holder else Fabric.UNPROGRAMMED.value,
            holder=(("run_id", str(holder["runId"])), ("owner", str(holder["owner"])), ("mode", str(holder["mode"])),
                    ("slurm_job", str(holder.get("slurmJob") or ""))) if holder else None,
            faults=tuple((str(f["name"]), str(f["status"])) for f in show.get("activeFaults") or ()),
            seq=int(show["seq"]),
        )


class Metrics:
    """The metric set of one csd, in a registry of its own. The loop calls `publish()` and the
    `observe_*` methods; the listener renders `registry`.

    `ops`: the operations csd serves (its command table); `outcomes`: what a request can end as
    besides "ok" and "replayed" (the wire's error codes). Anything else is counted as "other"."""

    def __init__(self, version: str, ops: Iterable[str], outcomes: Iterable[str]):
        # Counters get no `_created` series: they would double what a scrape renders.
        prometheus_client.disable_created_metrics()
        self.registry = CollectorRegistry(auto_describe=False)
        self.version = version
        self.view: View | None = None  # replaced whole by publish(); read whole by a scrape
        self._ops = frozenset(ops)
        self._outcomes = frozenset(outcomes) | {"ok", "replayed"}
        self._event_types = frozenset(CATALOG) | frozenset(faults.EVENT_SEVERITIES)
        r = self.registry
        self.requests = Counter("csd_requests", "Requests answered, by operation and outcome (ok, replayed or "
                                "the error code).", ["op", "outcome"], registry=r)
        self.request_seconds = Histogram("csd_request_duration_seconds", "Time csd took to answer a request, "
                                         "from its arrival to its reply.", ["op", "outcome"], registry=r,
                                         buckets=REQUEST_BUCKETS)
        self.denials = Counter("csd_denials", "Requests and connections refused before they were looked at, "
                               "by reason.", ["reason"], registry=r)
        self.runs_opened = Counter("csd_runs_opened", "Runs opened.", registry=r)
        self.runs_closed = Counter("csd_runs_closed", "Runs closed by their runtime.", registry=r)
        self.runs_aborted = Counter("csd_runs_aborted", "Runs aborted, by cause.", ["cause"], registry=r)
        self.samples = Counter("csd_samples_streamed", "Samples runtimes reported feeding to the fabric.", registry=r)
        self.events = Counter("csd_events", "Events emitted, by type.", ["type"], registry=r)
        self.commit_seconds = Histogram("csd_commit_duration_seconds", "Time a durable change took to commit to "
                                        "the state store (fsync included).", registry=r, buckets=COMMIT_BUCKETS)
        for cause in ABORT_CAUSES:  # every cause from the start: a rate over a series born later misses its first
            self.runs_aborted.labels(cause)
        for reason in DENIAL_REASONS:
            self.denials.labels(reason)
        self._request_children: dict = {}
        self._event_children: dict = {}
        r.register(_DeviceCollector(self))

    # -- from the serving loop only ------------------------------------------------------------------

    def publish(self, show: dict) -> None:
        """The device's state changed: `show` is a fresh `system.show` result."""
        self.view = View.of(show)

    def observe_request(self, op, outcome, seconds: float) -> None:
        """One request answered: `op` as the client sent it (anything, even None), `outcome`
        "ok", "replayed" or its error code, `seconds` from arrival to reply."""
        try:
            count, latency = self._request_children[(op, outcome)]
        except (KeyError, TypeError):  # TypeError: an op no dict can hold (hostile input)
            count, latency = self._request_pair(op, outcome)
        count.inc()
        latency.observe(seconds)

    def _request_pair(self, op, outcome) -> tuple:
        known_op = isinstance(op, str) and op in self._ops
        known_outcome = isinstance(outcome, str) and outcome in self._outcomes
        labels = (op if known_op else OTHER, outcome if known_outcome else OTHER)
        pair = self._request_children.get(labels)
        if pair is None:
            pair = (self.requests.labels(*labels), self.request_seconds.labels(*labels))
            self._request_children[labels] = pair  # only closed-set labels are ever keys
        return pair

    def observe_event(self, event: dict) -> None:
        """An event was emitted (and made durable): count it, and the run it opened or ended."""
        type_ = event.get("type")
        if type_ == "EventTrainingStarted":
            self.runs_opened.inc()
        elif type_ == "EventTrainingCompleted":
            self.runs_closed.inc()
        elif type_ == "EventTrainingAborted":
            cause = (event.get("details") or {}).get("cause")
            self.runs_aborted.labels(cause if cause in ABORT_CAUSES else OTHER).inc()
        child = self._event_children.get(type_) if isinstance(type_, str) else None
        if child is None:
            label = type_ if isinstance(type_, str) and type_ in self._event_types else OTHER
            child = self._event_children[label] = self.events.labels(label)
        child.inc()

    def observe_samples(self, count: int) -> None:
        """A runtime reported `count` samples fed (an accepted run.stream, not a replay)."""
        self.samples.inc(count)

    def observe_denial(self, reason: str) -> None:
        """A request or connection refused unread; `reason` one of DENIAL_REASONS."""
        self.denials.labels(reason if reason in DENIAL_REASONS else OTHER).inc()

    def observe_commit(self, seconds: float) -> None:
        """A commit to the state store took `seconds`."""
        self.commit_seconds.observe(seconds)


class _DeviceCollector:
    """The device's gauges, built from the current View on each scrape (in the listener's thread)."""

    def __init__(self, metrics: Metrics):
        self._metrics = metrics

    def collect(self):
        view = self._metrics.view  # one read: the loop may publish the next one meanwhile
        info = GaugeMetricFamily("csd_info", "This csd: its version and the system's serial (always 1).",
                                 labels=["version", "serial", "system_type"])
        info.add_metric([self._metrics.version, view.serial if view else "", "cs2"], 1)
        yield info
        if view is None:  # before the first publish there is nothing true to say about the device
            return
        yield _state_set("csd_lifecycle_state", "The lifecycle state: 1 for the current one.", "state",
                         [s.value for s in Lifecycle], view.state)
        yield _state_set("csd_system_health", "systemHealth as `system show` reports it: 1 for the current value.",
                         "health", HEALTH_VALUES, view.health)
        code = GaugeMetricFamily("csd_system_health_code", "systemHealth as the real system's numeric code "
                                 "(status_cs2: 1 OK, 2 DEGRADED, 3 CRITICAL, 5 STANDBY, …).")
        code.add_metric([], _CODES.get(view.health, Health.UNKNOWN.code))
        yield code
        modes = [m.value for m in ExecMode]
        yield _state_set("csd_active_execmode", "The execution mode the system runs in: 1 for the current one.",
                         "execmode", modes, view.active_execmode)
        yield _state_set("csd_configured_execmode", "The execution mode `system activate` boots into.",
                         "execmode", modes, view.configured_execmode)
        yield _state_set("csd_fabric_state", "The wafer's fabric: 1 for its current state.", "fabric",
                         [f.value for f in Fabric], view.fabric)
        held = GaugeMetricFamily("csd_fabric_held", "1 while a run holds the fabric.")
        held.add_metric([], 0 if view.holder is None else 1)
        yield held
        holder = GaugeMetricFamily("csd_fabric_holder_info", "The run holding the fabric (1; absent when free).",
                                   labels=["run_id", "owner", "mode", "slurm_job"])
        if view.holder is not None:
            holder.add_metric([value for _, value in view.holder], 1)
        yield holder
        status = dict(view.faults)
        active = GaugeMetricFamily("csd_fault_active", "1 while the fault is active (affecting systemHealth).",
                                   labels=["fault", "health", "effect"])
        armed = GaugeMetricFamily("csd_fault_armed", "1 while a transition fault waits for its transition.",
                                  labels=["fault"])
        for fault in faults.FAULTS:
            active.add_metric([fault.name, fault.health.value, fault.effect.value], 1 if status.get(fault.name) == "active" else 0)
            if fault.transition is not None:
                armed.add_metric([fault.name], 1 if status.get(fault.name) == "armed" else 0)
        yield active
        yield armed
        seq = GaugeMetricFamily("csd_event_seq", "The seq of the newest event (events show and the event stream).")
        seq.add_metric([], view.seq)
        yield seq


def _state_set(name: str, documentation: str, label: str, values, current: str) -> GaugeMetricFamily:
    """A gauge with one series per value, 1 for `current` (listed even if unforeseen), else 0."""
    family = GaugeMetricFamily(name, documentation, labels=[label])
    for value in (values if current in values else (*values, current)):
        family.add_metric([value], 1 if value == current else 0)
    return family
