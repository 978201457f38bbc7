"""The metrics listener's serving loop (daemon/metrics/listener.py says why it is built so):
one thread, non-blocking sockets under a selector, every connection bounded by one deadline from
its accept to the end of its answer, places capped per address and in all, complete requests
answered in arrival order no closer than `min_interval` apart.

`Loop(server, respond, limits).run()` (the listening socket and its limits: http_socket.py)
serves until `stop()` (from any thread), then closes every connection and the listening socket.
`respond(head)` makes the whole answer to a well-formed request head (daemon/metrics/
http_codec.py reads and refuses heads).
"""

from __future__ import annotations

import errno
import selectors
import socket
import time
from collections import deque
from typing import Callable

from . import http_codec
from .http_socket import Limits

_CHUNK = 4096  # bytes read at a time: more than any request head but a hostile one
_LINGER_BYTES = 65536  # read and dropped after an answer before closing anyway
_ACCEPT_PAUSE = 0.1  # seconds without accepting after the process ran out of descriptors


class _Conn:
    """One client connection: reading its request head, waiting its turn, writing its answer, or
    lingering after it (reading what else the client sent, so that closing with unread data does
    not reset the connection and lose the answer in the client's kernel)."""

    READING, WAITING, WRITING, LINGERING = "reading", "waiting", "writing", "lingering"
    IDLE = (READING, LINGERING)  # what may give way to a new connection: nothing is being answered

    def __init__(self, sock: socket.socket, peer: str, deadline: float):
        self.sock = sock
        self.peer = peer
        self.deadline = deadline
        self.state = _Conn.READING
        self.received = b""
        self.head: http_codec.Head | None = None
        self.out = b""
        self.lingered = 0  # bytes read and dropped after the answer
        self.watched = 0  # the selector events it is registered for (0: not registered)


class Loop:
    """The listener's thread: accepts, reads, answers and expires every connection without
    blocking on any of them."""

    def __init__(self, server: socket.socket, respond: Callable[[http_codec.Head], bytes], limits: Limits):
        self.server = server
        self.respond = respond
        self.limits = limits
        self.selector = selectors.DefaultSelector()
        self.conns: dict[int, _Conn] = {}  # by descriptor, oldest first (accept order)
        self.per_peer: dict[str, int] = {}
        self.waiting: deque[_Conn] = deque()  # complete requests, in arrival order, for their turn
        self.next_answer = 0.0  # monotonic time before which no other request is answered (pacing)
        self.accept_paused_until = 0.0
        self.evicted = 0  # connections closed to make room for newer ones (for tests and the bench)
        self.stopping = False
        self.wake_r, self.wake_w = socket.socketpair()
        self.wake_r.setblocking(False)
        self.selector.register(server, selectors.EVENT_READ, "accept")
        self.selector.register(self.wake_r, selectors.EVENT_READ, "wake")

    def stop(self) -> None:
        self.stopping = True
        try:
            self.wake_w.send(b"x")
        except OSError:
            pass

    def run(self) -> None:
        try:
            while not self.stopping:
                for key, mask in self.selector.select(self._timeout()):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "wake":
                        self._drain_wake()
                    elif self.conns.get(key.fd) is key.data:  # not closed earlier in this round
                        self._ready(key.data, mask)
                self._resume_accepting()
                self._answer_in_turn()
                self._expire()
        finally:
            for conn in list(self.conns.values()):
                self._close(conn)
            self.selector.close()
            for sock in (self.server, self.wake_r, self.wake_w):
                sock.close()

    def _timeout(self) -> float:
        now = time.monotonic()
        oldest = next(iter(self.conns.values()), None)  # the first to expire: all share one timeout
        wake = [oldest.deadline] if oldest is not None else []
        if self.waiting:
            wake.append(self.next_answer)
        if self.accept_paused_until:
            wake.append(self.accept_paused_until)
        return max(0.0, min(wake) - now) if wake else 1.0

    # -- connections come and go --------------------------------------------------------------------

    def _accept(self) -> None:
        for _ in range(64):  # a burst at a time, so reading and answering are not starved by connects
            try:
                sock, address = self.server.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    self._pause_accepting()  # the connects wait in the kernel's queue meanwhile
                    return
                continue  # the peer went away between its connect and this accept
            self._admit(sock, address[0])

    def _admit(self, sock: socket.socket, peer: str) -> None:
        if not self._make_room(peer):
            sock.close()  # every place is being answered: the client comes back later
            return
        sock.setblocking(False)
        conn = _Conn(sock, peer, time.monotonic() + self.limits.timeout)
        self.conns[sock.fileno()] = conn
        self.per_peer[peer] = self.per_peer.get(peer, 0) + 1
        self._watch(conn, selectors.EVENT_READ)
        self._read(conn)  # a scraper's request is often there already: take it before others crowd in

    def _make_room(self, peer: str) -> bool:
        """Whether a new connection from `peer` may be held, after closing one that is idle if
        a cap is reached: the oldest still sending its request (or lingering after its answer),
        from `peer` if its own cap is reached, else from the address holding the most. Idle is
        checked, not assumed: what a candidate has sent meanwhile is read first, so a scraper
        whose request arrived while connects crowded in is answered, not pushed out."""
        while True:
            peer_full = self.per_peer.get(peer, 0) >= self.limits.max_per_peer
            if not peer_full and len(self.conns) < self.limits.max_connections:
                return True
            victim = self._oldest_idle(peer if peer_full else max(self.per_peer, key=self.per_peer.get))
            if victim is None:
                return False
            (self._read if victim.state == _Conn.READING else self._linger)(victim)
            # Still idle: it gives way (else it was closed, or is being answered: look again).
            if self.conns.get(victim.sock.fileno()) is victim and victim.state in _Conn.IDLE:
                self._close(victim)
                self.evicted += 1

    def _oldest_idle(self, peer: str) -> _Conn | None:
        return next((c for c in self.conns.values() if c.peer == peer and c.state in _Conn.IDLE), None)

    def _close(self, conn: _Conn) -> None:
        fd = conn.sock.fileno()
        if self.conns.pop(fd, None) is None:
            return
        self.per_peer[conn.peer] -= 1
        if not self.per_peer[conn.peer]:
            del self.per_peer[conn.peer]
        self._watch(conn, 0)
        conn.sock.close()

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in list(self.conns.values()):  # oldest first, and all share one timeout
            if conn.deadline > now:
                break
            self._close(conn)
        while self.waiting and self.waiting[0].sock.fileno() == -1:
            self.waiting.popleft()  # expired while waiting its turn

    def _pause_accepting(self) -> None:
        self.selector.unregister(self.server)
        self.accept_paused_until = time.monotonic() + _ACCEPT_PAUSE

    def _resume_accepting(self) -> None:
        if self.accept_paused_until and time.monotonic() >= self.accept_paused_until:
            self.accept_paused_until = 0.0
            self.selector.register(self.server, selectors.EVENT_READ, "accept")

    def _drain_wake(self) -> None:
        try:
            self.wake_r.recv(64)
        except OSError:
            pass

    def _watch(self, conn: _Conn, events: int) -> None:
        """Have the selector watch `conn` for `events` (0: not at all)."""
        if events == conn.watched:
            return
        if not conn.watched:
            self.selector.register(conn.sock, events, conn)
        elif not events:
            self.selector.unregister(conn.sock)
        else:
            self.selector.modify(conn.sock, events, conn)
        conn.watched = events

    # -- requests and answers ------------------------------------------------------------------------

    def _ready(self, conn: _Conn, mask: int) -> None:
        if conn.state == _Conn.READING and mask & selectors.EVENT_READ:
            self._read(conn)
        elif conn.state == _Conn.WRITING and mask & selectors.EVENT_WRITE:
            self._write(conn)
        elif conn.state == _Conn.LINGERING and mask & selectors.EVENT_READ:
            self._linger(conn)

    @staticmethod
    def _recv(conn: _Conn) -> bytes | None:
        """What the client sent, b"" once it closed (or reset), None if nothing has come yet."""
        try:
            return conn.sock.recv(_CHUNK)
        except BlockingIOError:
            return None
        except OSError:
            return b""

    def _read(self, conn: _Conn) -> None:
        data = self._recv(conn)
        if data is None:
            return
        if not data:
            self._close(conn)  # the client went away (or reset) before its request was complete
            return
        conn.received += data
        try:
            head = http_codec.read_head(conn.received)
        except http_codec.Refusal as exc:
            self._send(conn, http_codec.refusal(exc))  # at once: no render, nothing to pace
            return
        if head is not None:
            conn.head, conn.received = head, b""
            conn.state = _Conn.WAITING
            self._watch(conn, 0)  # nothing more to read: what else it sends waits in the kernel
            self.waiting.append(conn)

    def _answer_in_turn(self) -> None:
        while self.waiting and time.monotonic() >= self.next_answer:
            conn = self.waiting.popleft()
            if conn.sock.fileno() == -1:
                continue  # closed while it waited (its deadline passed)
            self._send(conn, self.respond(conn.head))
            self.next_answer = time.monotonic() + self.limits.min_interval

    def _send(self, conn: _Conn, answer: bytes) -> None:
        conn.state, conn.out = _Conn.WRITING, answer
        self._write(conn)

    def _write(self, conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.out)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._close(conn)
            return
        conn.out = conn.out[sent:]
        if conn.out:
            self._watch(conn, selectors.EVENT_WRITE)  # the rest when the client reads
            return
        try:
            conn.sock.shutdown(socket.SHUT_WR)  # the answer is whole: tell the client
        except OSError:
            self._close(conn)
            return
        conn.state, conn.lingered = _Conn.LINGERING, 0
        self._watch(conn, selectors.EVENT_READ)
        self._linger(conn)

    def _linger(self, conn: _Conn) -> None:
        """Read and drop what the client still sends, until it closes (a scraper does so once it
        has the answer), _LINGER_BYTES have come, or the deadline."""
        data = self._recv(conn)
        if data is None:
            return
        conn.lingered += len(data)
        if not data or conn.lingered > _LINGER_BYTES:
            self._close(conn)
