"""Hostile clients of csd's metrics listener (issue 24): a slowloris client, hundreds of
half-open connections, more connections than the caps, oversize request lines and heads, junk
and generated request heads. Whatever they do, a scraper at a steady pace gets ≥ 99% of its
scrapes answered within the deadline, the listener keeps one thread and a bounded number of
connections, and every refused request is answered with its status and closed.

In-process listeners run with a 1 s deadline and scrape every 0.1 s, so CI sees the deadline
bite several times in a few seconds; the real csd runs as shipped (5 s) and is scraped every
0.2 s while a slowloris client and 256 half-open connections hold on. Prometheus' own pace
(1 s) is measured by hand in bench/metrics_attack.py (bench/RESULTS.md). CI generates
FUZZ_HTTP_HEADS request heads (default 300); `make fuzz` many more."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from csadmin.daemon.metrics import http_codec
from csadmin.daemon.metrics.metric_set import Metrics
from csadmin.daemon.metrics.endpoint import parse
from csadmin.daemon.metrics.listener import MetricsListener
from tests.harness import ROOT, wait_until

from .http_clients import HalfOpen, Slowloris, scrape_once, scrape_paced

HEADS = int(os.environ.get("FUZZ_HTTP_HEADS", "300"))
STATUSES = {200, 400, 404, 414, 431, 501}


def new_metrics() -> Metrics:
    from csadmin import errors
    from csadmin.daemon.commands import COMMANDS

    return Metrics("9.9.9", COMMANDS, errors.WIRE_CODES)


def listener(**settings) -> MetricsListener:
    """A listener with a 1 s deadline, unpaced, on a free loopback port."""
    return MetricsListener(new_metrics().registry, parse("0"), **{"timeout": 1.0, "min_interval": 0, **settings})


def listener_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "csd-metrics")


def exchange(port: int, data: bytes, timeout: float = 10.0) -> bytes:
    """Send `data`, say nothing more, and read what comes back until the listener closes."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # refused and closed before all of it was sent: what came back still counts
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except ConnectionResetError:
            pass
        return received


def status_of(answer: bytes) -> int:
    assert answer.startswith(b"HTTP/1.0 "), answer[:80]
    return int(answer[9:12])


# -- pressure: the scraper still gets through ----------------------------------------------------


def test_a_slowloris_client_is_cut_at_the_deadline_and_scrapes_go_on():
    with listener() as served, Slowloris(served.bound.port, every=0.3) as slow:
        wait_until(lambda: slow.lines_sent >= 1, 10, what="the slowloris client to be under way")
        scrapes = scrape_paced(served.bound.port, count=40, every=0.1, deadline=1.0)
        assert scrapes.share >= 0.99, scrapes.summary()
        # The 1 s deadline is for the whole request: a line every 0.3 s does not extend it.
        wait_until(lambda: slow.closed_by_server >= 2, 10, what="the listener to cut the slowloris client again")
        assert listener_threads() == 1


def test_256_half_open_connections_do_not_starve_the_scraper():
    with listener() as served, HalfOpen(served.bound.port, 256) as half:
        wait_until(lambda: half.open == 256, 30, what="256 half-open connections")
        scrapes = scrape_paced(served.bound.port, count=40, every=0.1, deadline=1.0)
        assert scrapes.share >= 0.99, scrapes.summary()
        wait_until(lambda: half.closed_by_server >= 256, 10, what="the deadline to close the half-open ones")
        assert served.connections <= 256 + 1 and listener_threads() == 1


_SMALL_CAPS_LISTENER = """
import sys, time
from csadmin.daemon.commands import COMMANDS
from csadmin.daemon.metrics.metric_set import Metrics
from csadmin.daemon.metrics.endpoint import parse
from csadmin.daemon.metrics.listener import MetricsListener
from csadmin import errors
listener = MetricsListener(Metrics("9.9.9", COMMANDS, errors.WIRE_CODES).registry, parse("0"), min_interval=0,
                           timeout=5.0, max_per_peer=64, max_connections=128)
listener.start()
print("port", listener.bound.port, flush=True)
while True:
    print("held", listener.connections, "evicted", listener.evicted, flush=True)
    time.sleep(0.1)
"""


# Alone: the scraper connects, then sends its request; a scraper process the neighbours' load keeps
# off the CPU between the two for longer than the holder takes to open 64 more connections from the
# same address (~15 ms) is pushed out as the oldest idle one: the limit docs/operations.md states.
@pytest.mark.alone
def test_more_connections_than_the_caps_give_way_to_a_fresh_scraper():
    # 256 held open against a cap of 64 per address, by a client that opens another at once for
    # each one closed: each new one pushes out the oldest idle one, so it churns as fast as it
    # can connect, and the scraper (which sends its request at once) is still served, because an
    # idle connection is pushed out only once what it sent has been read. The listener, the
    # holder and the scraper are three processes, as they are in use (in one, the GIL would hold
    # the scraper's request back while the listener churns).
    server = subprocess.Popen([sys.executable, "-c", _SMALL_CAPS_LISTENER], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    attacker = None
    try:
        port = int(server.stdout.readline().split()[1])
        seen = {"held": 0, "evicted": 0}

        def follow():
            for line in server.stdout:
                words = line.split()
                seen.update(held=int(words[1]), evicted=int(words[3]))

        threading.Thread(target=follow, daemon=True).start()
        attacker = subprocess.Popen([sys.executable, "-m", "tests.fuzz.http_clients", "half-open", str(port), "256"],
                                    cwd=ROOT)
        wait_until(lambda: seen["evicted"] >= 1024, 30, what="the caps to push out connections")
        scrapes = scrape_paced(port, count=30, every=0.1, deadline=5.0)
        assert seen["held"] <= 64 and attacker.poll() is None and server.poll() is None
        assert scrapes.share >= 0.99, f"{scrapes.summary()}; {seen['evicted']} connections pushed out"
    finally:
        for proc in (attacker, server):
            if proc is not None:
                proc.kill()
                proc.wait()


def test_one_address_cannot_push_out_anothers_connections():
    with listener(max_per_peer=8, max_connections=10, timeout=30.0) as served:
        port = served.bound.port
        other = []
        for _ in range(2):  # from 127.0.0.2: Linux routes all of 127/8 to loopback
            sock = socket.socket()
            sock.bind(("127.0.0.2", 0))
            sock.connect(("127.0.0.1", port))
            other.append(sock)
        wait_until(lambda: served.connections == 2, 10, what="127.0.0.2's two connections to be held")
        mine = [socket.create_connection(("127.0.0.1", port)) for _ in range(20)]
        wait_until(lambda: served.connections == 10, 10, what="the caps to be reached")
        for sock in other:  # still held: a recv would block, not see the close
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
        assert scrape_once(port, 5.0) is not None
        for sock in other + mine:
            sock.close()


# -- refused requests: answered with their status, then closed -------------------------------------


@pytest.mark.parametrize("data, status", [
    (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET /" + b"a" * 5000, 414),  # refused before its line even ends
    (b"GET /metrics HTTP/1.1\r\nX-Big: " + b"b" * 5000 + b"\r\n\r\n", 431),
    (b"GET /metrics HTTP/1.1\r\n" + b"X-Many: c\r\n" * 1000, 431),
    (b"GET /metrics HTTP/1.1\r\n" + b"".join(b"X-%d: c\r\n" % i for i in range(70)) + b"\r\n", 431),  # 70 headers
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)), 400),  # a TLS client hello
    (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 400),  # HTTP/2's preface
    (b"\x00\xff\xfe garbage", 400),
    (b"GET /metrics\r\n\r\n", 400),  # HTTP/0.9
    (b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n", 400),
    (b"GET /metrics HTTP/1.1\r\nX-Bin: \xff\xfe\r\n\r\n", 400),
    (b"GET http://evil/metrics HTTP/1.1\r\n\r\n", 400),
    (b"\r\n\r\n", 400),
    (b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", 501),
    (b"GET /metrics HTTP/1.0\n\n", 200),  # bare newlines are fine
])
def test_oversize_and_malformed_requests_are_answered_and_closed(data, status):
    with listener() as served:
        assert status_of(exchange(served.bound.port, data)) == status
        assert scrape_once(served.bound.port, 5.0) is not None


def test_a_request_that_never_ends_its_head_is_closed_without_an_answer():
    with listener() as served:
        assert exchange(served.bound.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n") == b""


def test_a_client_that_does_not_read_its_answer_is_cut_at_the_deadline():
    with listener(timeout=1.0) as served:
        sock = socket.create_connection(("127.0.0.1", served.bound.port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        sock.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")  # and never reads
        wait_until(lambda: served.connections == 0, 10, what="the listener to let go of the reader that never reads")
        assert scrape_once(served.bound.port, 5.0) is not None
        sock.close()


_VALID = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n"


@st.composite
def heads(draw):
    """Junk, and valid requests cut, spliced and flipped at random places."""
    kind = draw(st.sampled_from(["junk", "mutated", "printable"]))
    if kind == "junk":
        return draw(st.binary(max_size=12_000))
    if kind == "printable":
        return draw(st.text(alphabet=st.characters(min_codepoint=9, max_codepoint=126), max_size=9000)).encode()
    data = bytearray(_VALID)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(max_size=64)) if draw(st.booleans()) else b""
        if data and draw(st.booleans()):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


def test_generated_request_heads_are_served_refused_or_dropped_never_a_crash():
    with listener() as served:
        port = served.bound.port
        seen: dict[int | None, int] = {}

        @settings(max_examples=HEADS, deadline=None, database=None, phases=[Phase.generate],
                  suppress_health_check=list(HealthCheck))
        @given(heads())
        def one(data):
            answer = exchange(port, data)
            status = status_of(answer) if answer else None
            assert status is None or status in STATUSES, answer[:80]
            seen[status] = seen.get(status, 0) + 1

        one()
        print(f"\nmetrics heads: {sorted(seen.items(), key=str)}")
        assert scrape_once(port, 5.0) is not None and listener_threads() == 1
        wait_until(lambda: served.connections == 0, 10, what="every fuzz connection to be let go")


def test_the_head_reader_never_asks_for_more_than_its_bounds():
    # Pure: whatever arrives, past MAX_HEAD bytes the reader has decided (served or refused).
    for data in (b"G" * (http_codec.MAX_HEAD + 1), b"GET / HTTP/1.1\r\n" + b"a: b\r\n" * 2000):
        with pytest.raises(http_codec.Refusal):
            http_codec.read_head(data)


# -- the real csd ------------------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return {"threads": int(fields["Threads"]), "rss_kb": int(fields["VmRSS"].split()[0])}


def test_csd_answers_scrapes_under_a_slowloris_client_and_256_half_open_connections(make_csd):
    csd = make_csd(extra_args=["--metrics-endpoint", "0"]).start()
    with open(csd.connection_file) as f:
        port = int(json.load(f)["metrics_url"].split(":")[2].split("/")[0])
    assert scrape_once(port, 5.0) is not None
    with csd.client() as client:
        shown = client.system_show()
    before = proc_status(csd.proc.pid)
    with Slowloris(port, every=4.0) as slow, HalfOpen(port, 256) as half:
        wait_until(lambda: half.open == 256 and slow.lines_sent >= 1, 30, what="the attack to be under way")
        scrapes = scrape_paced(port, count=30, every=0.2, deadline=5.0)  # 6 s: past the 5 s deadline
        with csd.client() as client:  # the request path is not the listener's: it answers as ever
            now = client.system_show()
            assert (now["state"], now["seq"]) == (shown["state"], shown["seq"])
        during = proc_status(csd.proc.pid)
        wait_until(lambda: slow.closed_by_server >= 1, 15, what="csd to cut the slowloris client at 5 s")
    assert scrapes.share >= 0.99, scrapes.summary()
    assert during["threads"] == before["threads"], (before, during)
    assert during["rss_kb"] - before["rss_kb"] < 16 * 1024, (before, during)
    print(f"\ncsd under attack: {scrapes.summary()}; {before} -> {during}")
