"""How many connections csd holds, and refusing the rest before libzmq runs out of file
descriptors.

libzmq 4.3's ipc listener aborts the whole process when accept() fails with EMFILE
(src/ipc_listener.cpp: an errno_assert that does not list it), so 300 idle connections to the
socket file of a csd limited to 256 descriptors killed it with SIGABRT; no key is needed for that.
So csd:
- raises its soft descriptor limit to the hard one at start (the unit sets LimitNOFILE=);
- holds at most `capacity` connections: MAX_CONNECTIONS, or half of the descriptors still free
  after start, whichever is fewer. The other half is headroom for a burst libzmq accepts before
  csd sees it;
- watches its sockets' accepts and disconnects (socket monitors) and shuts down, at once, each
  new connection beyond the capacity: the peer sees the connection close (and retries later),
  libzmq closes the descriptor, and csd carries on serving the connections it holds.
It logs what it can hold at start, and the refusals (coalesced) while they happen.

What this cannot do: libzmq's I/O thread accepts before csd's thread hears of it, and nothing
csd can set makes that accept fail gracefully, so one burst that lands more connections than the
headroom before csd's thread runs still aborts csd (systemd restarts it, nothing acknowledged is
lost). One local process makes ~10-30 connections per ms, and a busy csd's thread may wait some
ms, so the headroom must be hundreds of descriptors: at 256 (headroom ~118) a 300-connection
burst aborted csd 3 times in 15 on a busy machine; at 2,048 (headroom ~1,000) none in 24 (peaks
~300 over capacity); the unit's LimitNOFILE=16384 gives ~8,000.
"""

from __future__ import annotations

import os
import resource
import socket
import struct

import zmq

from .coalesce import Coalescer

MAX_CONNECTIONS = 4096  # far more than admins and runtimes need; each costs memory in libzmq
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED


def raise_fd_limit() -> tuple[int, int]:
    """Raise the soft RLIMIT_NOFILE to the hard limit; return (soft, hard) as they are now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft, hard


def open_fds() -> int | None:
    """Descriptors this process has open now (None where /proc is not there to say)."""
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # not the one listdir itself used
    except OSError:
        return None


def _shut(fd: int) -> None:
    """Make libzmq drop the connection on `fd` (it sees EOF and closes it itself)."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:  # not a socket any more (closed and reused meanwhile): nothing to do
        return
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    finally:
        sock.detach()  # the descriptor stays libzmq's


class ConnectionGate:
    def __init__(self, sockets: list[zmq.Socket], log, ctx: zmq.Context | None = None):
        """Monitor `sockets` (bound, listening). Call `handle_ready()` when a `monitors` socket
        is readable."""
        self.log = log
        self.fd_limit, _hard = raise_fd_limit()
        self.monitors = [sock.get_monitor_socket(_EVENTS) for sock in sockets]
        self._sockets = sockets
        self.baseline = open_fds() or 0
        free = max(0, self.fd_limit - self.baseline)
        self.capacity = max(1, min(MAX_CONNECTIONS, free // 2))
        self._open: dict[int, None] = {}  # fds of connections held, oldest first
        self._shut_fds: set[int] = set()
        self._refusals = Coalescer(per_second=1)
        self.refused = 0
        log.info(
            "connection_capacity", connections=self.capacity, fd_limit=self.fd_limit, fds_in_use=self.baseline,
            zmq_max_sockets=ctx.get(zmq.MAX_SOCKETS) if ctx is not None else None,
            hint="raise LimitNOFILE= in the unit to hold more" if self.capacity < MAX_CONNECTIONS else None,
        )

    @property
    def headroom(self) -> int:
        """Descriptors left beyond the capacity and those open at start: what a burst libzmq
        accepts, and csd's other sockets (the metrics listener's connections), must fit in."""
        return max(0, self.fd_limit - self.baseline - self.capacity)

    @property
    def held(self) -> int:
        """Connections held now: counted from the descriptors where /proc says, else from events."""
        fds = open_fds()
        return fds - self.baseline if fds is not None else len(self._open) - len(self._shut_fds)

    def handle_ready(self, monitor: zmq.Socket) -> None:
        while monitor.poll(0, zmq.POLLIN):
            frames = monitor.recv_multipart()
            event, fd = struct.unpack("=HI", frames[0][:6])
            if event == zmq.EVENT_ACCEPTED:
                self._open[fd] = None
            elif event == zmq.EVENT_DISCONNECTED:
                self._open.pop(fd, None)
                self._shut_fds.discard(fd)
        over = self.held - self.capacity
        if over <= 0:
            return
        newest = [fd for fd in reversed(self._open) if fd not in self._shut_fds][:over]
        for fd in newest:
            _shut(fd)
            self._shut_fds.add(fd)
        self.refused += len(newest)
        if newest and self._refusals.admit("limit"):
            self.log.warning(
                "connection_limit_reached", connections=self.capacity, refused_total=self.refused,
                effect="new connections are closed at once until others end",
                hint="find who holds so many connections (ss -xp); raise LimitNOFILE= to hold more",
            )

    def close(self) -> None:
        for sock, monitor in zip(self._sockets, self.monitors):
            try:
                sock.disable_monitor()
            except zmq.ZMQError:
                pass
            monitor.close(0)
