"""The hostile frames of issue 10, as a corpus every fuzz run sends first: each once crashed,
hung or misled csd (or would have). Each entry checks the answer it must get."""

from __future__ import annotations

import json

import zmq

from csadmin.shared import protocol

from .target import FuzzTarget


def _raw(op: str, args, request_id="h", ascii_only=True) -> bytes:
    text = json.dumps({"v": 1, "id": request_id, "op": op, "args": args}, ensure_ascii=ascii_only)
    return text.encode("utf-8", "surrogatepass")


def _expect(body: dict, code: str, what: str) -> None:
    got = "ok" if body.get("ok") else body["error"]["code"]
    assert got == code, f"{what}: expected {code}, got {got}: {body}"


def nesting(t: FuzzTarget) -> None:
    for depth in (16, 17, 500, 998, 999, 1000, 30_000):
        for key in ("viewer", "admin"):
            code = "BAD_REQUEST"
            _expect(t.send(key, [b"[" * depth + b"]" * depth], f"nesting {depth}"), code, f"nesting {depth}")
            inner = b'{"v":1,"id":"n","op":"system.show","args":{"x":' + b"[" * depth + b"]" * depth + b"}}"
            _expect(t.send(key, [inner], f"args nested {depth}"), "INVALID_ARGUMENT" if depth < 16 else code,
                    f"args nested {depth}")


def surrogates(t: FuzzTarget) -> None:
    frames = [
        b'{"v":1,"id":"\\ud800","op":"system.show","args":{}}',
        b'{"v":1,"id":"\xed\xa0\x80","op":"system.show","args":{}}',
        b'{"v":1,"id":"s","op":"system.\\udfff","args":{}}',
        b'{"v":1,"id":"s","op":"system.show","args":{"\\ud800":1}}',
        b'{"v":1,"id":"s","op":"runs.show","args":{"run_id":"\xed\xb0\x80"}}',
        b'{"v":1,"id":"s","op":"system.standby","args":{"force":"\\udbff"}}',
    ]
    for frame in frames:
        for key in ("viewer", "admin"):
            if key == "admin" and b"standby" in frame:
                continue  # refused before it could run, but the admin corpus stays on reads
            _expect(t.send(key, [frame], "surrogate"), "BAD_REQUEST", f"surrogate {frame!r}")


def huge_numbers(t: FuzzTarget) -> None:
    program = {"fingerprint": "f", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
               "compile_time": 10**400, "est_samples_per_sec": 1.0, "size_bytes": 2**63}
    for op, args in [("audit.show", {"max_count": 2**63}), ("events.show", {"max_count": 10**400}),
                     ("events.show", {"from_time": -(2**63) - 1}), ("runs.list", {"max_count": 2**64}),
                     ("run.program", {"run_id": "run-000001", "program": program})]:
        _expect(t.send("admin", [_raw(op, args)], op), "INVALID_ARGUMENT", f"{op} {args}")
    _expect(t.send("viewer", [_raw("run.program", {"run_id": "x", "program": program})], "program"),
            "PERMISSION_DENIED", "viewer program")
    for constant in (b"NaN", b"Infinity", b"-Infinity", b"1e999"):
        frame = b'{"v":1,"id":"c","op":"events.show","args":{"max_count":' + constant + b"}}"
        body = t.send("viewer", [frame], "constant")
        assert not body["ok"], constant


def multipart_floods(t: FuzzTarget) -> None:
    request = protocol.request("m", "system.show")
    for count in (2, 10, 1000):
        _expect(t.send("viewer", [b"x" * 60_000] * count + [request], f"{count} x 60 KB"), "BAD_REQUEST",
                f"multipart of {count}")
    _expect(t.send("viewer", [request], "plain"), "ok", "a plain request after the floods")


def large_frames(t: FuzzTarget) -> None:
    """1,000 frames of 60 KB each (each one message), and frames over the 64 KiB limit."""
    for i in range(1000):
        _expect(t.send("viewer", [(b'{"v":1,"id":%d,"op":"x","args":{"p":"' % i).ljust(60_000, b"y")], "60 KB"),
                "BAD_REQUEST", "a 60 KB frame")
    for size in (protocol.MAX_FRAME_BYTES + 1, 1_000_000):
        t.send_unanswered("viewer", [b"z" * size])


def reused_ids(t: FuzzTarget) -> None:
    """Refused requests leave the state as it was, so the admin may send them here."""
    _expect(t.send("admin", [_raw("config.execmode.setup", {"mode": "WEIGHT_STREAMING"}, "X")], "reuse"),
            "INVALID_STATE", "mode change while ACTIVE")
    body = t.send("admin", [_raw("system.standby", {}, "X")], "reuse")
    _expect(body, "INVALID_ARGUMENT", "an id reused for standby")
    _expect(t.send("admin", [_raw("system.activate", {}, 7)], "reuse"), "ok", "activate while ACTIVE")
    body = t.send("admin", [_raw("config.execmode.setup", {"mode": "PIPELINED"}, "7")], "reuse")
    _expect(body, "INVALID_STATE", '"7" is not 7')


def a_client_that_never_reads(t: FuzzTarget) -> None:
    sock = t.ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVHWM, 1)
    t.csd.secure(sock, t.keys["viewer"])
    sock.connect(t.csd.endpoint)
    try:
        for i in range(500):
            sock.send(protocol.request(f"r{i}", "events.show"))
            t.frames += 1
    finally:
        sock.close(0)


ALL = [nesting, surrogates, huge_numbers, multipart_floods, large_frames, reused_ids, a_client_that_never_reads]
