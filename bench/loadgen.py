"""A load generator process: N closed-loop clients, each with one request outstanding.

Run by load.py (never by hand) with the csd venv's Python. It reads a JSON spec line on stdin,
connects every client (ZeroMQ DEALER sockets, with CURVE when the spec has keys — csd's real key
files — or keep-alive HTTP connections for supervisor's XML-RPC), sends one warm-up request on
each so every handshake is done, prints `{"ready": true}`, then waits for a `go` line giving the
measurement window on CLOCK_MONOTONIC (shared by every process on the machine). It counts the
replies that arrive inside the window, and their latencies if asked, and prints one JSON line.

All clients of a process share one poll loop, so one process can stand for many clients at a
small cost per request; load.py spreads clients over a few such processes.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import sys
import time
import xmlrpc.client

now_ns = time.monotonic_ns


class CsdFrames:
    """csd's wire format: a fresh request id per request (a repeated id would be answered from
    csd's reply cache); `args` is a list cycled through, each client starting at its own index."""

    def __init__(self, spec: dict, tag: str):
        self.heads = [f'{{"v":1,"id":"{tag}'.encode()]
        self.tails = [f'","op":"{spec["op"]}","args":{json.dumps(a, separators=(",", ":"))}}}'.encode()
                      for a in spec.get("args") or [{}]]
        self.n = 0

    def make(self, client: int, k: int) -> bytes:
        self.n += 1
        return self.heads[0] + str(self.n).encode() + self.tails[(client + k) % len(self.tails)]

    @staticmethod
    def check(reply: bytes) -> str | None:
        return None if b'"ok":true' in reply or b'"ok": true' in reply else reply[:300].decode(errors="replace")


class CircusFrames:
    def __init__(self, spec: dict, tag: str):
        self.head = b'{"command":"' + spec["command"].encode() + b'","properties":{},"id":"' + tag.encode()
        self.n = 0

    def make(self, client: int, k: int) -> bytes:
        self.n += 1
        return self.head + str(self.n).encode() + b'"}'

    @staticmethod
    def check(reply: bytes) -> str | None:
        return None if b'"status": "ok"' in reply else reply[:300].decode(errors="replace")


class RawFrames:
    """For the bare echo: a frame the size of a csd request, echoed back unchanged."""

    def __init__(self, spec: dict, tag: str):
        self.frame = spec["payload"].encode()

    def make(self, client: int, k: int) -> bytes:
        return self.frame

    @staticmethod
    def check(reply: bytes) -> str | None:
        return None


FRAMES = {"csd": CsdFrames, "circus": CircusFrames, "raw": RawFrames}


class Stats:
    def __init__(self, window: tuple[int, int], record: bool):
        self.start, self.end = window
        self.record = record
        self.count = 0
        self.errors = 0
        self.first_error = None
        self.lat_us: list[int] = []

    def done(self, sent: int, at: int, error: str | None) -> None:
        if error is not None:
            self.errors += 1
            self.first_error = self.first_error or error
        if self.start <= at <= self.end:
            self.count += 1
            if self.record:
                self.lat_us.append((at - sent) // 1000)


def run_zmq(spec: dict, tag: str) -> dict:
    import zmq

    ctx = zmq.Context()
    frames = FRAMES[spec["request"]["kind"]](spec["request"], tag)
    warm = FRAMES[spec["warm"]["kind"]](spec["warm"], tag + "w") if spec.get("warm") else frames
    socks = []
    curves = spec.get("curves") or [spec.get("curve")] * len(spec["identities"])
    for ident, curve in zip(spec["identities"], curves):
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        if ident:
            s.setsockopt(zmq.ROUTING_ID, ident.encode())
        if curve:
            s.setsockopt(zmq.CURVE_SERVERKEY, curve["server_key"].encode())
            s.setsockopt(zmq.CURVE_PUBLICKEY, curve["public_key"].encode())
            s.setsockopt(zmq.CURVE_SECRETKEY, curve["secret_key"].encode())
        s.connect(spec["endpoint"])
        socks.append(s)
    for i, s in enumerate(socks):  # handshakes done before anything is timed
        s.send(warm.make(i, 0))
        if not s.poll(60_000):
            raise SystemExit(f"loadgen: no answer to the warm-up request on {spec['endpoint']}")
        error = warm.check(s.recv())
        if error:
            raise SystemExit(f"loadgen: the warm-up request failed: {error}")
    print(json.dumps({"ready": True}), flush=True)
    go = json.loads(sys.stdin.readline())
    stats = Stats((go["from"], go["to"]), spec.get("record_latency", False))
    index = {s: i for i, s in enumerate(socks)}
    sent = [0] * len(socks)
    nth = [0] * len(socks)
    while now_ns() < go["start"]:
        time.sleep(0.0005)
    poller = zmq.Poller()
    for i, s in enumerate(socks):
        poller.register(s, zmq.POLLIN)
        sent[i] = now_ns()
        s.send(frames.make(i, 0))
    active = len(socks)
    end, check, make = go["to"], frames.check, frames.make
    while active:
        ready = poller.poll(2000)
        if not ready:
            break  # a reply that never comes after the window: count what we have
        for s, _ in ready:
            i = index[s]
            reply = s.recv()
            at = now_ns()
            stats.done(sent[i], at, check(reply))
            if at < end:
                nth[i] += 1
                sent[i] = now_ns()
                s.send(make(i, nth[i]))
            else:
                active -= 1
                poller.unregister(s)
    for s in socks:
        s.close(0)
    ctx.term()
    return vars(stats)


class HttpClient:
    """One keep-alive HTTP/1.1 connection with one request outstanding."""

    def __init__(self, endpoint: str, request: bytes):
        if endpoint.startswith("unix:"):
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(endpoint[len("unix:"):])
        else:
            host, port = endpoint[len("tcp:"):].rsplit(":", 1)
            self.sock = socket.create_connection((host, int(port)))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = request
        self.buf = b""
        self.sent = 0

    def send(self) -> None:
        self.buf = b""
        self.sent = now_ns()
        self.sock.sendall(self.request)

    def feed(self) -> str | None | bool:
        """Read what is there; False while the reply is incomplete, else None or an error."""
        data = self.sock.recv(65536)
        if not data:
            raise SystemExit("loadgen: the HTTP server closed the connection")
        self.buf += data
        head, sep, body = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return False
        length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        if len(body) < length:
            return False
        if not head.startswith(b"HTTP/1.1 200") or b"<fault>" in body:
            return body[:300].decode(errors="replace")
        return None


def run_http(spec: dict, tag: str) -> dict:
    req = spec["request"]
    body = xmlrpc.client.dumps(tuple(req.get("params", [])), req["method"]).encode()
    request = (b"POST /RPC2 HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n\r\n"
               % len(body)) + body
    clients = [HttpClient(spec["endpoint"], request) for _ in spec["identities"]]
    sel = selectors.DefaultSelector()
    for c in clients:
        c.send()
        while (outcome := c.feed()) is False:
            pass
        if outcome:
            raise SystemExit(f"loadgen: the warm-up request failed: {outcome}")
        sel.register(c.sock, selectors.EVENT_READ, c)
    print(json.dumps({"ready": True}), flush=True)
    go = json.loads(sys.stdin.readline())
    stats = Stats((go["from"], go["to"]), spec.get("record_latency", False))
    while now_ns() < go["start"]:
        time.sleep(0.0005)
    for c in clients:
        c.send()
    active = len(clients)
    while active:
        ready = sel.select(2.0)
        if not ready:
            break
        for key, _ in ready:
            c = key.data
            outcome = c.feed()
            if outcome is False:
                continue
            at = now_ns()
            stats.done(c.sent, at, outcome)
            if at < go["to"]:
                c.send()
            else:
                active -= 1
                sel.unregister(c.sock)
    for c in clients:
        c.sock.close()
    return vars(stats)


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    tag = f"{spec.get('tag', 'b')}{os.getpid()}-"
    result = (run_http if spec["transport"] == "http" else run_zmq)(spec, tag)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; run.py reports it
        sys.exit(130)
