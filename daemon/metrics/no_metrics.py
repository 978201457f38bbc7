"""csd's metrics when they are off: `NO_METRICS` takes the calls the metric set takes
(daemon/metrics/metric_set.py `Metrics`) and does nothing, so the loop calls the same methods
either way, and a csd without `metrics_endpoint` never imports prometheus_client (~44 ms).
Which of the two a csd gets is decided at boot (daemon/process/metrics_start.py).
"""

from __future__ import annotations


class NoMetrics:
    """The metric set's methods, doing nothing (metrics are off)."""

    def publish(self, show: dict) -> None:
        pass

    def observe_request(self, op, outcome, seconds: float) -> None:
        pass

    def observe_event(self, event: dict) -> None:
        pass

    def observe_samples(self, count: int) -> None:
        pass

    def observe_denial(self, reason: str) -> None:
        pass

    def observe_commit(self, seconds: float) -> None:
        pass


NO_METRICS = NoMetrics()
