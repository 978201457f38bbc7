"""The opt-in HTTP listener that serves csd's metrics to Prometheus (`metrics_endpoint`).

prometheus_client's own `start_http_server` answers each scrape on a new thread and renders the
registry every time. csd's serving loop shares the interpreter (and its GIL) with that thread,
and rendering is pure Python (~2–9 ms for csd's metric set), so a client scraping in a tight
loop would take a good share of the loop's time. And a listener that serves one connection at a
time is held by any client that sends its request slowly (0 scrapes in 60 s under one slowloris
client, issue 24). This listener bounds both:
- one thread, of its own, runs a non-blocking loop (selectors) over every connection at once,
  so a slow or silent client holds one place, never the thread;
- each connection has TIMEOUT seconds from its accept to the end of its answer (a whole-request
  deadline, not one per read): past it, it is closed whatever it is doing;
- at most MAX_PER_PEER connections from one address and MAX_CONNECTIONS in all. One beyond
  either takes the place of the oldest connection still sending its request (from that address,
  or from the address holding the most), so idle and half-open connections give way to fresh
  scrapers, which send their request at once; one address can never push out another's;
- the request head is bounded (daemon/metrics/http_codec.py): oversize lines and heads, junk and
  methods other than GET/HEAD are answered 414/431/400/501 and closed at once;
- the rendered page is reused for RENDER_SECONDS, so a scrape storm renders it a few times a
  second, not once per request;
- answers to complete requests are paced MIN_INTERVAL apart (at most 10 a second; the others
  wait their turn, within their deadline), so a scrape storm cannot take the loop's time.
bench/RESULTS.md has the loop's figures with a scraper hammering the listener, and the scrapes
answered under a slowloris client and 256 half-open connections.

It serves `GET /metrics` (and HEAD): Prometheus' text format, or OpenMetrics when the scraper
asks for it, both written by prometheus_client's encoders. No gzip: on loopback it only costs
CPU. There is no authentication, so the metric set holds nothing a viewer could not read
(daemon/metrics/metric_set.py); bind it to loopback (the default) unless a firewall guards it.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from prometheus_client.exposition import choose_encoder

from . import http_codec, http_server, http_socket
from .endpoint import MetricsEndpoint

RENDER_SECONDS = 1.0  # how long a rendered page is reused (Prometheus scrapes every 10–60 s)
MIN_INTERVAL = 0.1  # between answers: at most 10 a second (Prometheus needs one per scrape interval)
TIMEOUT = 5.0  # seconds from a connection's accept to the end of its answer
MAX_CONNECTIONS = http_socket.MAX_CONNECTIONS
MAX_PER_PEER = http_socket.MAX_PER_PEER
INDEX = b"csd: Prometheus metrics at /metrics\n"


class MetricsListener:
    """Serves `registry` on `endpoint` from a thread of its own, once `start()`ed (or entered
    with `with`), until `close()`. `on_error(exc)` hears of a failure to render (answered 500;
    the listener carries on)."""

    def __init__(self, registry, endpoint: MetricsEndpoint, on_error: Callable[[BaseException], None] | None = None,
                 render_seconds: float = RENDER_SECONDS, min_interval: float = MIN_INTERVAL, timeout: float = TIMEOUT,
                 clock: Callable[[], float] = time.monotonic, max_connections: int = MAX_CONNECTIONS,
                 max_per_peer: int = MAX_PER_PEER):
        self.registry = registry
        self.clock = clock  # seconds, for the render cache's age
        self.endpoint = endpoint
        self.on_error = on_error
        self.render_seconds = render_seconds
        self.limits = http_socket.Limits(timeout, min_interval, max_connections, max_per_peer)
        self.renders = 0  # how many times the registry was rendered (for tests and the bench)
        self._cache: dict[str, tuple[float, bytes]] = {}  # content type → (rendered at, page)
        self._loop: http_server.Loop | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "MetricsListener":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Bind (raises OSError, e.g. the port is taken) and start serving."""
        self._loop = http_server.Loop(http_socket.bind(self.endpoint), self.respond, self.limits)
        self._thread = threading.Thread(target=self._loop.run, name="csd-metrics", daemon=True)
        self._thread.start()

    @property
    def bound(self) -> MetricsEndpoint:
        """The address and port actually bound (port 0 resolved)."""
        host, port = self._loop.server.getsockname()[:2]
        return MetricsEndpoint(host, port)

    @property
    def connections(self) -> int:
        """Connections held now (for tests and the bench)."""
        return len(self._loop.conns) if self._loop is not None else 0

    @property
    def evicted(self) -> int:
        """Idle connections closed so far to make room for newer ones (for tests and the bench)."""
        return self._loop.evicted if self._loop is not None else 0

    def close(self) -> None:
        """Stop serving, close every connection and release the port; returns once the thread
        has ended."""
        if self._loop is None:
            return
        self._loop.stop()
        self._thread.join()
        self._loop = self._thread = None

    def page(self, accept: str | None) -> tuple[bytes, str]:
        """The metrics page for a scraper that accepts `accept`, and its content type."""
        encoder, content_type = choose_encoder(accept or "")
        now = self.clock()
        cached = self._cache.get(content_type)
        if cached is not None and now - cached[0] < self.render_seconds:
            return cached[1], content_type
        page = encoder(self.registry)
        self.renders += 1
        self._cache[content_type] = (now, page)
        return page, content_type

    def respond(self, head: http_codec.Head) -> bytes:
        """The whole answer to a well-formed request."""
        body = head.method == "GET"
        if head.path == "/metrics":
            try:
                page, content_type = self.page(head.headers.get("accept"))
            except Exception as exc:  # a bug in a collector: say so, keep serving
                if self.on_error is not None:
                    self.on_error(exc)
                return http_codec.answer(500, b"csd could not render its metrics; its log says why\n", body=body)
            return http_codec.answer(200, page, content_type, body)
        if head.path == "/":
            return http_codec.answer(200, INDEX, body=body)
        return http_codec.answer(404, b"not found: csd serves its metrics at /metrics\n", body=body)
