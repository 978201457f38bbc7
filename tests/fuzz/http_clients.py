"""Clients of csd's metrics listener, fair and hostile, over real TCP: a scraper at a fixed pace
(Prometheus), a slowloris client, and a holder of many half-open connections. Used by
tests/fuzz/test_fuzz_metrics.py (a fast pace, in CI) and bench/metrics_attack.py (Prometheus'
1 s pace, by hand).

Both attackers run on a thread of their own until `stop()`, and put back every connection the
listener closes, at once: the pressure is kept up whatever the listener does."""

from __future__ import annotations

import http.client
import select
import socket
import threading
import time
from dataclasses import dataclass, field

SLOWLORIS_START = b"GET /metrics HTTP/1.1\r\nHost: csd\r\n"


class _Attacker:
    """A thread of connections to `port`; subclasses say what they do (`_run`)."""

    def __init__(self, port: int, host: str = "127.0.0.1"):
        self.address = (host, port)
        self.closed_by_server = 0  # connections the listener closed (deadline, eviction, refusal)
        self.connect_failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _connect(self) -> socket.socket | None:
        try:
            return socket.create_connection(self.address, timeout=5)
        except OSError:
            self.connect_failures += 1
            time.sleep(0.01)  # the listener is refusing connects: do not spin on it
            return None


class Slowloris(_Attacker):
    """One connection that sends a request head a header line at a time, `every` seconds apart,
    and never ends it (issue 24: a line every 4 s held the old listener for good)."""

    def __init__(self, port: int, every: float, host: str = "127.0.0.1"):
        super().__init__(port, host)
        self.every = every
        self.lines_sent = 0

    def _run(self) -> None:
        sock = None
        while not self._stop.is_set():
            if sock is None:
                sock = self._connect()
                if sock is None:
                    continue
                try:
                    sock.sendall(SLOWLORIS_START)
                except OSError:
                    sock = self._lost(sock)
                    continue
            readable, _, _ = select.select([sock], [], [], self.every)
            try:
                if readable:
                    sock.recv(4096)  # an answer or the close: either way the listener let go
                    sock = self._lost(sock)
                    continue
                sock.sendall(b"X-Slow-%d: a\r\n" % self.lines_sent)
                self.lines_sent += 1
            except OSError:
                sock = self._lost(sock)
        if sock is not None:
            sock.close()

    def _lost(self, sock: socket.socket) -> None:
        sock.close()
        self.closed_by_server += 1
        return None


class HalfOpen(_Attacker):
    """`count` connections that send nothing (even ones) or half a request line (odd ones) and
    then wait; each one the listener closes is opened again at once."""

    def __init__(self, port: int, count: int, host: str = "127.0.0.1"):
        super().__init__(port, host)
        self.count = count
        self.open = 0

    def _run(self) -> None:
        socks: list[socket.socket] = []
        opened = 0
        while not self._stop.is_set():
            while len(socks) < self.count and not self._stop.is_set():
                sock = self._connect()
                if sock is None:
                    break
                if opened % 2:
                    try:
                        sock.sendall(b"GET /metr")
                    except OSError:
                        sock.close()
                        continue
                opened += 1
                socks.append(sock)
            self.open = len(socks)
            if not socks:
                continue
            readable, _, _ = select.select(socks, [], [], 0.05)
            for sock in readable:
                try:
                    sock.recv(4096)
                except OSError:
                    pass
                sock.close()
                socks.remove(sock)
                self.closed_by_server += 1
        for sock in socks:
            sock.close()


@dataclass
class Scrapes:
    """What a paced scraper saw: each scrape's seconds to a whole 200 answer, None if it had none
    within the deadline."""

    deadline: float
    seconds: list = field(default_factory=list)

    @property
    def answered(self) -> int:
        return sum(1 for s in self.seconds if s is not None)

    @property
    def share(self) -> float:
        return self.answered / len(self.seconds) if self.seconds else 0.0

    def summary(self) -> str:
        times = sorted(s for s in self.seconds if s is not None)
        worst = f", slowest {times[-1] * 1000:.1f} ms, median {times[len(times) // 2] * 1000:.1f} ms" if times else ""
        return f"{self.answered}/{len(self.seconds)} scrapes answered within {self.deadline:g} s{worst}"


def scrape_once(port: int, deadline: float, host: str = "127.0.0.1") -> float | None:
    """GET /metrics as Prometheus does; the seconds to the whole answer, or None."""
    started = time.monotonic()
    conn = http.client.HTTPConnection(host, port, timeout=deadline)
    try:
        conn.request("GET", "/metrics", headers={"Accept": "text/plain;version=0.0.4"})
        response = conn.getresponse()
        body = response.read()
        elapsed = time.monotonic() - started
        ok = response.status == 200 and b"csd_" in body and elapsed <= deadline
        return elapsed if ok else None
    except OSError:
        return None
    finally:
        conn.close()


def scrape_paced(port: int, count: int, every: float, deadline: float, host: str = "127.0.0.1") -> Scrapes:
    """`count` scrapes started `every` seconds apart (the next waits for the one before, as
    Prometheus never overlaps scrapes of one target)."""
    result = Scrapes(deadline)
    start = time.monotonic()
    for i in range(count):
        pause = start + i * every - time.monotonic()
        if pause > 0:
            time.sleep(pause)  # the pace itself, not a wait for a condition
        result.seconds.append(scrape_once(port, deadline, host))
    return result


if __name__ == "__main__":
    # `python -m tests.fuzz.http_clients half-open PORT COUNT` or `... slowloris PORT EVERY`: one
    # attacker in a process of its own (as a real one is: no GIL shared with the listener or the
    # scraper), until this process is killed.
    import sys

    kind, port, amount = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    attacker = HalfOpen(port, int(amount)) if kind == "half-open" else Slowloris(port, float(amount))
    attacker.start()
    threading.Event().wait()
