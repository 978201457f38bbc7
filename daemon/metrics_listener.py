"""The opt-in HTTP listener that serves csd's metrics to Prometheus (`metrics_endpoint`).

prometheus_client's own `start_http_server` answers each scrape on a new thread and renders the
registry every time. csd's serving loop shares the interpreter (and its GIL) with that thread,
and rendering is pure Python (~2–9 ms for csd's metric set), so a client scraping in a tight
loop would take a good share of the loop's time. This listener bounds that cost:
- one thread serves one connection at a time (a thread per connection would let a flood of
  connections make a flood of threads);
- the rendered page is reused for RENDER_SECONDS, so a scrape storm renders it a few times a
  second, not once per request;
- after each request the thread pauses so that it serves at most 1 / MIN_INTERVAL requests a
  second (the rest wait in the kernel's accept queue, costing nothing);
- a connection that does not send its request within TIMEOUT seconds is dropped.
bench/RESULTS.md has the loop's figures with and without a scraper hammering the listener.

It serves `GET /metrics` (and HEAD): Prometheus' text format, or OpenMetrics when the scraper
asks for it, both written by prometheus_client's encoders. No gzip: on loopback it only costs
CPU. There is no authentication, so the metric set holds nothing a viewer could not read
(daemon/metrics.py); bind it to loopback (the default) unless a firewall guards it.
"""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from socketserver import TCPServer
from typing import Callable

from prometheus_client.exposition import choose_encoder

from .metrics_endpoint import MetricsEndpoint

RENDER_SECONDS = 1.0  # how long a rendered page is reused (Prometheus scrapes every 10–60 s)
MIN_INTERVAL = 0.1  # between requests served: at most 10 a second (Prometheus needs one per scrape interval)
TIMEOUT = 5.0  # seconds a connection has to send its request
INDEX = b"csd: Prometheus metrics at /metrics\n"


class MetricsListener:
    """Serves `registry` on `endpoint` from a thread of its own, once `start()`ed (or entered
    with `with`), until `close()`. `on_error(exc)` hears of a failure to render (answered 500;
    the listener carries on)."""

    def __init__(self, registry, endpoint: MetricsEndpoint, on_error: Callable[[BaseException], None] | None = None,
                 render_seconds: float = RENDER_SECONDS, min_interval: float = MIN_INTERVAL, timeout: float = TIMEOUT,
                 clock: Callable[[], float] = time.monotonic):
        self.registry = registry
        self.clock = clock  # seconds, for the render cache's age
        self.endpoint = endpoint
        self.on_error = on_error
        self.render_seconds = render_seconds
        self.min_interval = min_interval
        self.timeout = timeout
        self.renders = 0  # how many times the registry was rendered (for tests and the bench)
        self._cache: dict[str, tuple[float, bytes]] = {}  # content type → (rendered at, page)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "MetricsListener":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        """Bind (raises OSError, e.g. the port is taken) and start serving."""
        family, address = _resolve(self.endpoint)
        self._server = _Server(address, family, self)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="csd-metrics", daemon=True)
        self._thread.start()

    @property
    def bound(self) -> MetricsEndpoint:
        """The address and port actually bound (port 0 resolved)."""
        host, port = self._server.server_address[:2]
        return MetricsEndpoint(host, port)

    def close(self) -> None:
        """Stop serving and release the port; returns once the thread has ended (at most
        `timeout` seconds if a client is halfway through sending its request)."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self._server = self._thread = None

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


def _resolve(endpoint: MetricsEndpoint) -> tuple[int, tuple]:
    family, _, _, _, address = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM,
                                                  flags=socket.AI_PASSIVE)[0]
    return family, address


class _Server(TCPServer):
    # Not http.server.HTTPServer: its server_bind() looks the address up in DNS (getfqdn).
    allow_reuse_address = True

    def __init__(self, address: tuple, family: int, listener: MetricsListener):
        self.address_family = family
        self.listener = listener
        super().__init__(address, _Handler)

    def process_request(self, request, client_address) -> None:
        started = time.monotonic()
        try:
            super().process_request(request, client_address)
        finally:
            rest = self.listener.min_interval - (time.monotonic() - started)
            if rest > 0:
                time.sleep(rest)  # the pacing: what a scrape storm can cost the serving loop

    def handle_error(self, request, client_address) -> None:
        pass  # a client that went away mid-request: nothing to report (socketserver would print)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "csd-metrics"
    sys_version = ""
    protocol_version = "HTTP/1.0"  # one request per connection: no idle keep-alive holding the thread

    def setup(self) -> None:
        self.timeout = self.server.listener.timeout
        super().setup()

    def do_GET(self) -> None:
        self._answer(body=True)

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            listener = self.server.listener
            try:
                page, content_type = listener.page(self.headers.get("Accept"))
            except Exception as exc:  # a bug in a collector: say so, keep serving
                if listener.on_error is not None:
                    listener.on_error(exc)
                self._send(500, b"csd could not render its metrics; its log says why\n", "text/plain; charset=utf-8", body)
                return
            self._send(200, page, content_type, body)
        elif path == "/":
            self._send(200, INDEX, "text/plain; charset=utf-8", body)
        else:
            self._send(404, b"not found: csd serves its metrics at /metrics\n", "text/plain; charset=utf-8", body)

    def _send(self, status: int, payload: bytes, content_type: str, body: bool) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if body:
            self.wfile.write(payload)

    def log_message(self, format, *args) -> None:
        pass  # csd logs in JSON through structlog; a line per scrape would only be noise
