"""Starting csd's metrics: the real metric set and its HTTP listener when `metrics_endpoint`
is set, or `NO_METRICS` (daemon/metrics/no_metrics.py) when it is not.

`start()` is called by boot (daemon/process/boot.py) after the ZeroMQ sockets are bound and
before READY=1: a port already taken stops csd from starting, like a taken TCP endpoint.
"""

from __future__ import annotations

from csadmin import __version__, errors

from ..commands import COMMANDS
from ..metrics.no_metrics import NO_METRICS
from ..serve.coalesce import Coalescer
from ..serve.sockets import bind_or_say


def start(endpoint_text: str, show: dict, log, descriptors: int | None = None):
    """(the metric set, its started listener): published once with `show` (a `system.show`
    result), served at `endpoint_text` (daemon/metrics/endpoint.py); (NO_METRICS, None) when that
    is "". `descriptors`: how many connections the listener may hold at most (its own cap if
    fewer; half of them from one address). Raises BindError (daemon/serve/sockets.py) when the address
    cannot be bound."""
    from ..metrics.endpoint import parse

    endpoint = parse(endpoint_text)
    if endpoint is None:
        return NO_METRICS, None
    from ..metrics.metric_set import Metrics
    from ..metrics.listener import MAX_CONNECTIONS, MetricsListener

    metrics = Metrics(__version__, COMMANDS, errors.WIRE_CODES)
    metrics.publish(show)
    failures = Coalescer(per_second=1)

    def render_failed(exc: BaseException) -> None:  # in the listener's thread; answered 500
        if failures.admit("render"):
            log.error("metrics_render_failed", reason=f"{type(exc).__name__}: {exc}")

    most = max(2, min(MAX_CONNECTIONS, descriptors if descriptors is not None else MAX_CONNECTIONS))
    listener = MetricsListener(metrics.registry, endpoint, on_error=render_failed, max_connections=most,
                               max_per_peer=most // 2)
    bind_or_say("metrics_endpoint", endpoint.netloc, listener.start)
    log.info("metrics_listening", url=listener.bound.url, connections=most, per_address=most // 2)
    return metrics, listener
