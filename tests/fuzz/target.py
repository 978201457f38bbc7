"""A real csd under fuzzing: clients with a viewer and an admin key on real CURVE sockets, every
frame answered within a deadline (else it is a hang), and checks that csd is alive, its state
unchanged and its RSS within bounds."""

from __future__ import annotations

import json
import time

import zmq

from tests.harness import Daemon

REPLY_DEADLINE_S = 10.0  # a frame not answered within this is a hang
RSS_BUDGET_MB = 20.0


class Hang(AssertionError):
    pass


class Crash(AssertionError):
    pass


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


class FuzzTarget:
    def __init__(self):
        self.csd = Daemon(log_level="info")
        self.keys = {"viewer": self.csd.add_key("viewer", "viewer"), "admin": self.csd.admin_key}
        self.csd.start()
        self.ctx = zmq.Context()
        self.sockets = {name: self._connect(key) for name, key in self.keys.items()}
        self.frames = 0
        self.answers: dict[str, int] = {}
        self.state = self.system_state()
        self.rss_start = rss_mb(self.csd.proc.pid)
        self.rss_max = self.rss_start
        self.started = time.monotonic()

    def _connect(self, key: str) -> zmq.Socket:
        sock = self.ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        self.csd.secure(sock, key)
        sock.connect(self.csd.endpoint)
        return sock

    def system_state(self) -> dict:
        with self.csd.client(timeout=10) as c:
            snap = c.system_show()
        return {k: snap[k] for k in ("state", "configuredExecmode", "activeExecmode", "runHolder", "pendingUntil")}

    def send(self, key: str, parts: list[bytes], note: str = "") -> dict:
        """Send one message; return csd's reply (one frame, a JSON error or result)."""
        sock = self.sockets[key]
        sock.send_multipart(parts)
        self.frames += 1
        if not sock.poll(int(REPLY_DEADLINE_S * 1000), zmq.POLLIN):
            self._alive(note, parts)
            raise Hang(f"no reply within {REPLY_DEADLINE_S} s to {note}: {parts[-1][:300]!r}")
        reply = sock.recv_multipart()
        if len(reply) != 1:
            raise AssertionError(f"{len(reply)} frames back for {note}")
        body = json.loads(reply[0])
        if "Traceback" in reply[0].decode():
            raise AssertionError(f"a traceback on the wire for {note}")
        code = "ok" if body.get("ok") else body["error"]["code"]
        self.answers[code] = self.answers.get(code, 0) + 1
        return body

    def send_unanswered(self, key: str, parts: list[bytes]) -> None:
        """A message csd drops by design (a frame over 64 KiB: libzmq closes that connection),
        on a socket of its own, so no other request is lost with it."""
        sock = self._connect(self.keys[key])
        try:
            sock.send_multipart(parts)
            self.frames += 1
        finally:
            sock.close(0)

    def _alive(self, note, parts) -> None:
        code = self.csd.proc.poll()
        if code is not None:
            raise Crash(f"csd exited with {code} after {note}: {parts[-1][:300]!r}\n{self.csd.log()[-3000:]}")

    def check(self) -> None:
        """After a batch: csd alive, answering `system show` with the state it had, RSS bounded."""
        self._alive("the batch", [b""])
        state = self.system_state()
        assert state == self.state, f"state changed: {self.state} -> {state}"
        rss = rss_mb(self.csd.proc.pid)
        self.rss_max = max(self.rss_max, rss)
        assert rss - self.rss_start < RSS_BUDGET_MB, f"RSS grew {rss - self.rss_start:.1f} MB"

    def summary(self) -> str:
        took = time.monotonic() - self.started
        return (f"{self.frames} frames in {took:.1f} s, 0 crashes, 0 hangs, RSS {self.rss_start:.1f} -> "
                f"max {self.rss_max:.1f} MB (+{self.rss_max - self.rss_start:.1f}), answers {dict(sorted(self.answers.items()))}")

    def close(self) -> None:
        for sock in self.sockets.values():
            sock.close(0)
        self.ctx.term()
        self.csd.cleanup()
