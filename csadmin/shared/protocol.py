"""The wire protocol between `csd` and its clients: one JSON frame each way.

Request:  {"v": 1, "id": "...", "op": "system.standby", "args": {...}}
Reply:    {"v": 1, "id": "...", "ok": true, "result": {...}}
          {"v": 1, "id": "...", "ok": false, "error": {"code": "...", "message": "...", "hint": "..."}}
Event (PUB, two frames): [type, {"seq": n, "type": ..., "severity": ..., "triggerTime": ms, "details": {...}}]

Requests go to a ROUTER socket from DEALER clients (never REQ) so a client can time out and
retry with the same id; the daemon answers a retried mutating request with its first reply.
"""

from __future__ import annotations

import json
import re

from .. import errors

VERSION = 1

# Frames larger than this are dropped by libzmq (ZMQ_MAXMSGSIZE) and the peer is disconnected;
# no reply is sent, and the client sees a timeout. Nothing legitimate comes close. A request is
# exactly one frame, so this also bounds the whole message (csd refuses multipart requests).
MAX_FRAME_BYTES = 64 * 1024
# How deep arrays and objects may nest in a request (a real one nests 3 deep: envelope, args,
# run.program's descriptor). Checked before parsing: the parser recurses once per level.
MAX_NESTING = 16
REASON_MAX_CHARS = 1000  # why a run ended (run.close, runs.abort): a sentence or two, not a log
MAX_ID_CHARS = 128  # a request id: a non-empty string of at most this many characters ...
ID_MIN, ID_MAX = -(2**63), 2**63 - 1  # ... or an integer in this (SQLite's) range

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")
# A \uD800-\uDFFF escape: the only way a lone surrogate gets past strict UTF-8 decoding.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class ProtocolError(Exception):
    """A frame csd cannot take as a request: `error` (a csadmin.errors class) says why, and
    `request_id` and `op` are what could be read of it, for the reply and the audit log."""

    def __init__(self, error: errors.CsError, request_id=None, op: str | None = None):
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id
        self.op = op


# One encoder, not one per call: json.dumps(obj, separators=...) builds a new JSONEncoder each time.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def encode(obj: dict) -> bytes:
    return _ENCODER.encode(obj).encode()


def request(request_id: str, op: str, args: dict | None = None) -> bytes:
    return encode({"v": VERSION, "id": request_id, "op": op, "args": args or {}})


def ok(request_id, result: dict) -> bytes:
    return encode({"v": VERSION, "id": request_id, "ok": True, "result": result})


_OK_HEAD = b'{"v":%d,"id":' % VERSION


def ok_encoded(request_id, result: bytes) -> bytes:
    """The same reply as `ok(request_id, result)`, from a result already encoded (a cached read)."""
    return b"".join((_OK_HEAD, encode(request_id), b',"ok":true,"result":', result, b"}"))


def error(request_id, exc: errors.CsError) -> bytes:
    """The reply refusing a request with `exc`. Only codes of the closed set go on the wire: any
    other error is a bug in csd, raised here (its loop answers INTERNAL and logs it)."""
    if not exc.on_wire:
        raise ValueError(f"{type(exc).__name__} ({exc.code}) is not an error csd may answer with")
    body = {"code": exc.code, "message": exc.message, "hint": exc.hint}
    if exc.fault is not None:  # a fault caused it: named, so a runtime need not parse the message
        body["fault"] = exc.fault
    return encode({"v": VERSION, "id": request_id, "ok": False, "error": body})


def arguments_hint(op: str, described: str) -> str:
    """The hint csd gives when `op`'s arguments fail validation: what the op takes (`described`).
    A console replaces it with its own usage (csadmin/cli/terms.py recognises it by this prefix)."""
    return f"{arguments_hint_prefix(op)}{described}."


def arguments_hint_prefix(op: str) -> str:
    return f"{op} takes "


def id_key(request_id) -> str:
    """A request id as a key that keeps its type: 7 and "7" are different requests."""
    return json.dumps(request_id)


def _bad(message: str, request_id=None, hint: str | None = None) -> ProtocolError:
    return ProtocolError(errors.BadRequest(message, hint), request_id)


def _check_nesting(text: str) -> None:
    """Refuse arrays/objects nested deeper than MAX_NESTING, without recursing (cheap when few
    brackets: a request has a handful)."""
    if text.count("[") + text.count("{") <= MAX_NESTING:
        return
    depth = 0
    for bracket in _BRACKETS.findall(_STRINGS.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > MAX_NESTING:
            raise _bad(f"The request is nested more than {MAX_NESTING} levels deep.")


def _has_lone_surrogate(value) -> bool:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _no_constants(name: str):
    raise ValueError(f"{name} is not a JSON number")


_ENVELOPE = frozenset(("v", "id", "op", "args"))
_DECODER = json.JSONDecoder(parse_constant=_no_constants)  # one, not one per call (as json.loads(...) makes)


def _usable_id(request_id) -> bool:
    if isinstance(request_id, bool):
        return False
    if isinstance(request_id, int):
        return ID_MIN <= request_id <= ID_MAX
    return isinstance(request_id, str) and 0 < len(request_id) <= MAX_ID_CHARS and not _has_lone_surrogate(request_id)


def decode_request(frame: bytes) -> tuple[str | int, str, dict]:
    """Return (id, op, args) or raise ProtocolError. Never raises anything else, whatever the
    frame: strict UTF-8 (no surrogates, as bytes or as \\u escapes), bounded size and nesting,
    standard JSON numbers only, a bounded id. The id is echoed in the error only when usable."""
    if len(frame) > MAX_FRAME_BYTES:
        raise _bad(f"The request is larger than {MAX_FRAME_BYTES} bytes.")
    try:
        text = frame.decode("utf-8")  # strict: json.loads(bytes) would let ED A0 80 through
    except UnicodeDecodeError:
        raise _bad("The request is not valid UTF-8.") from None
    _check_nesting(text)
    try:
        msg = _DECODER.decode(text)
    except (ValueError, RecursionError):
        raise _bad("The request is not valid JSON.") from None
    if not isinstance(msg, dict):
        raise _bad("The request must be a JSON object.")
    request_id = msg.get("id")
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(msg):  # `in` first: cheaper than the regex
        op = msg.get("op")
        raise ProtocolError(
            errors.BadRequest("The request holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair), "
                              "which is not text.", "Send valid Unicode text only."),
            request_id if _usable_id(request_id) else None,
            op if isinstance(op, str) and len(op) <= 100 and not _has_lone_surrogate(op) else None,
        )
    if not _usable_id(request_id):
        raise _bad(
            f"The request has no usable 'id' (a string of 1 to {MAX_ID_CHARS} characters, or an integer "
            "that fits in 64 bits)."
        )
    if msg.get("v") != VERSION:
        raise ProtocolError(
            errors.UnsupportedVersion(f"Protocol version {msg.get('v')!r} is not supported.",
                                      f"This daemon speaks version {VERSION}; upgrade the client."),
            request_id,
        )
    extra = () if msg.keys() <= _ENVELOPE else set(msg) - _ENVELOPE
    if extra:
        raise _bad(f"Unknown envelope keys: {', '.join(sorted(extra))}.", request_id)
    op = msg.get("op")
    if not isinstance(op, str) or not op:
        raise _bad("The request has no 'op' string.", request_id)
    args = msg.get("args", {})
    if not isinstance(args, dict):
        raise _bad("'args' must be a JSON object.", request_id)
    return request_id, op, args


def decode_reply(frame: bytes) -> dict:
    msg = json.loads(frame)
    if not isinstance(msg, dict) or "ok" not in msg:
        raise ValueError("not a reply envelope")
    return msg


def event_frames(event: dict) -> list[bytes]:
    return [event["type"].encode(), encode(event)]


def decode_event(payload: bytes) -> dict:
    return json.loads(payload)
