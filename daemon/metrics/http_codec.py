"""The little HTTP/1.x the metrics listener speaks (daemon/metrics/listener.py): reading a
request's head from the bytes received so far, within bounds, and writing an answer.

Pure (no sockets): `read_head(buffer)` says "need more" (None), gives the `Head`, or raises
`Refusal` with the status to answer (then the connection is closed). What is refused:
- a request line over MAX_LINE bytes: 414; a head (request line and headers) over MAX_HEAD
  bytes, a header line over MAX_LINE, or more than MAX_HEADERS headers: 431;
- anything that is not `METHOD TARGET HTTP/1.x` followed by `Name: value` lines, or that holds
  bytes other than printable ASCII and tabs: 400 (a TLS hello, an HTTP/2 preface, binary junk);
- a method other than GET or HEAD: 501 (the only two a metrics page needs).
A body is never read: GET and HEAD have none, and the connection closes after the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.utils import formatdate

MAX_LINE = 4096  # bytes in the request line or one header line (URLs and Accept are far shorter)
MAX_HEAD = 8192  # bytes in the whole head (Prometheus sends ~300)
MAX_HEADERS = 64

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 408: "Request Timeout", 414: "URI Too Long",
           431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
           503: "Service Unavailable"}
TEXT = "text/plain; charset=utf-8"

_TOKEN = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_REQUEST_LINE = re.compile(rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP/1\.[0-9]")
_PRINTABLE = re.compile(rb"[\t\x20-\x7e]*")


@dataclass(frozen=True)
class Head:
    method: str
    target: str  # as sent: a path, with its query
    headers: dict[str, str]  # names in lower case; a repeated name keeps its last value

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


class Refusal(Exception):
    """The request cannot be served: answer `status` with `why` and close."""

    def __init__(self, status: int, why: str):
        super().__init__(why)
        self.status = status
        self.why = why


def read_head(buffer: bytes) -> Head | None:
    """The request head at the start of `buffer`, None while it may still be arriving within the
    bounds; raises Refusal once it cannot be served (whatever comes next)."""
    end = _head_end(buffer)
    if end is None:
        first = buffer.split(b"\n", 1)
        if len(first[0]) > MAX_LINE:
            raise Refusal(414, f"the request line is over {MAX_LINE} bytes")
        # Junk is refused at once, not after MAX_HEAD bytes of it.
        if len(first) == 1:
            _check_start(first[0])
        else:
            _request_line(first[0].removesuffix(b"\r"))
        if len(buffer) > MAX_HEAD:
            raise Refusal(431, f"the request head is over {MAX_HEAD} bytes")
        return None
    if end > MAX_HEAD:
        raise Refusal(431, f"the request head is over {MAX_HEAD} bytes")
    lines = buffer[:end].replace(b"\r\n", b"\n").split(b"\n")
    while lines and not lines[-1]:
        lines.pop()
    if not lines:
        raise Refusal(400, "an empty request")
    if len(lines[0]) > MAX_LINE:
        raise Refusal(414, f"the request line is over {MAX_LINE} bytes")
    if len(lines) - 1 > MAX_HEADERS:
        raise Refusal(431, f"more than {MAX_HEADERS} header lines")
    method, target = _request_line(lines[0])
    headers = {}
    for line in lines[1:]:
        if len(line) > MAX_LINE:
            raise Refusal(431, f"a header line is over {MAX_LINE} bytes")
        name, colon, value = line.partition(b":")
        if not colon or not _TOKEN.fullmatch(name) or not _PRINTABLE.fullmatch(value):
            raise Refusal(400, "a header line is not `Name: value` in printable ASCII")
        headers[name.decode("ascii").lower()] = value.strip().decode("ascii")
    return Head(method, target, headers)


def _request_line(line: bytes) -> tuple[str, str]:
    """(method, target) of a whole request line; Refusal if it is not one served here."""
    found = _REQUEST_LINE.fullmatch(line)
    if found is None or not _PRINTABLE.fullmatch(line):
        raise Refusal(400, "not an HTTP/1.x request line (METHOD /path HTTP/1.1)")
    method, target = found.group(1).decode("ascii"), found.group(2).decode("ascii")
    if method not in ("GET", "HEAD"):
        raise Refusal(501, f"{method} is not served here: only GET and HEAD")
    if not target.startswith("/"):
        raise Refusal(400, "the request target must be a path such as /metrics")
    return method, target


def _head_end(buffer: bytes) -> int | None:
    """Where the head ends (after its blank line), or None if its blank line has not come."""
    ends = [i + len(mark) for mark in (b"\r\n\r\n", b"\n\n") if (i := buffer.find(mark)) >= 0]
    return min(ends) if ends else None


def _check_start(line: bytes) -> None:
    """Refuse at once a first line that cannot become a request line, however it goes on."""
    if line.endswith(b"\r"):
        line = line[:-1]
    method = line.split(b" ", 1)[0]
    if (method and not _TOKEN.fullmatch(method)) or not _PRINTABLE.fullmatch(line):
        raise Refusal(400, "not an HTTP/1.x request line (METHOD /path HTTP/1.1)")


def answer(status: int, payload: bytes, content_type: str = TEXT, body: bool = True) -> bytes:
    """The whole answer, head and (unless `body` is False: HEAD) payload; the connection closes
    after it (HTTP/1.0 semantics, so no idle keep-alive holds a place)."""
    head = (f"HTTP/1.0 {status} {REASONS.get(status, 'Error')}\r\n"
            "Server: csd-metrics\r\n"
            f"Date: {formatdate(usegmt=True)}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("ascii") + (payload if body else b"")


def refusal(exc: Refusal) -> bytes:
    """The answer to a refused request: its status and why, in one line."""
    return answer(exc.status, f"{exc.why}\n".encode("ascii"))
