"""`cerebras.appliance.cluster.client`: TelemetryClient, which on the real system buffers metrics
and reports them to the cluster's management server (its Grafana dashboards). There is no such
server here: csd keeps a run's own record (samples, steps, state) and the metrics a client should
watch are csd's (docs/operations.md). So the client takes the same arguments and calls, pushes
nothing anywhere, and says so once per process, at the first one built.
"""

from __future__ import annotations

import functools
import logging

logger = logging.getLogger("cerebras.appliance.cluster.client")


@functools.cache
def _say_once() -> None:
    logger.info("TelemetryClient: there is no cluster management server here; the run's telemetry is not "
                "reported (csd records the run: `cs runs show`).")


class TelemetryClient:
    """Accepts metrics, reports none (see the module's docstring)."""

    def __init__(self, mgmt_client=None, max_buffer_size: int = 128, max_buffer_seconds: int = 150):
        self._mgmt_client = mgmt_client
        self.max_buffer_size = max_buffer_size
        self.max_buffer_seconds = max_buffer_seconds
        _say_once()

    def __enter__(self) -> "TelemetryClient":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def push(self, metrics: dict, labels: dict | None = None) -> None:
        """Drop `metrics`: there is no server to report them to."""

    def flush_data(self) -> None:
        """Nothing is buffered, so nothing is flushed."""
