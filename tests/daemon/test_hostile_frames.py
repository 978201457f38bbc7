"""Hostile frames from registered keys, against a real csd over CURVE: each one gets a coded
answer and csd keeps serving with its state unchanged (issue 10's crashers, one test each)."""

import json
import os
import subprocess
import sys

import pytest
import zmq

from csadmin import errors
from csadmin.shared import protocol
from tests.harness import ROOT

# Each frame is refused and csd's state unchanged, so the tests share one csd; the two that read
# the audit log back (or revoke a key) have their own.
pytestmark = pytest.mark.shared_csd


@pytest.fixture
def keys(csd):
    def key(name, role):  # registered once per csd
        path = csd.key_path(name)
        return path if os.path.exists(path) else csd.add_key(name, role)

    return {"viewer": key("viewer", "viewer"), "operator": key("runtime", "operator"), "admin": csd.admin_key}


@pytest.fixture
def send(csd):
    """Send raw frames from a socket with `key`; return the reply's frames (or None after 10 s)."""
    ctx = zmq.Context()
    sockets = []

    def send(frames, key=None, socket=None):
        sock = socket
        if sock is None:
            sock = ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            csd.secure(sock, key)
            sock.connect(csd.endpoint)
            sockets.append(sock)
        sock.send_multipart([frames] if isinstance(frames, bytes) else frames)
        if not sock.poll(10_000, zmq.POLLIN):
            return None
        return sock.recv_multipart()

    yield send
    for sock in sockets:
        sock.close(0)
    ctx.term()


def _still_serving(csd, state="ACTIVE"):
    assert csd.proc.poll() is None, f"csd exited with {csd.proc.returncode}:\n{csd.log()[-3000:]}"
    with csd.client() as c:
        assert c.system_show()["state"] == state


def _error(reply) -> dict:
    assert reply is not None, "no reply"
    assert len(reply) == 1, "one frame back"
    body = json.loads(reply[0])
    assert body["ok"] is False and body["error"]["code"] in errors.WIRE_CODES
    assert "Traceback" not in reply[0].decode()
    return body


@pytest.mark.parametrize("depth", [500, 999, 1000, 20_000])
def test_deep_nesting_from_a_viewer(csd, keys, send, depth):
    body = _error(send(b"[" * depth + b"]" * depth, keys["viewer"]))
    assert body["error"]["code"] == "BAD_REQUEST" and "nested" in body["error"]["message"]
    inner = b'{"v":1,"id":"n","op":"system.show","args":{"x":' + b"[" * depth + b"]" * depth + b"}}"
    assert _error(send(inner, keys["viewer"]))["error"]["code"] == "BAD_REQUEST"
    _still_serving(csd)


@pytest.mark.parametrize(
    "frame",
    [
        b'{"v":1,"id":"\\ud800","op":"system.show","args":{}}',
        b'{"v":1,"id":"\xed\xa0\x80","op":"system.show","args":{}}',
        b'{"v":1,"id":"s","op":"system.show","args":{"x":"\\udc00"}}',
        b'{"v":1,"id":"s","op":"system.\xed\xb0\x80","args":{}}',
    ],
)
def test_lone_surrogates_from_a_viewer(csd, keys, send, frame):
    assert _error(send(frame, keys["viewer"]))["error"]["code"] == "BAD_REQUEST"
    _still_serving(csd)


@pytest.mark.own_csd
def test_lone_surrogate_from_a_revoked_keys_open_connection_is_denied_and_audited(csd, keys, send):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    csd.secure(sock, keys["operator"])
    sock.connect(csd.endpoint)
    try:
        assert json.loads(send(protocol.request("w", "meta.whoami"), socket=sock)[0])["ok"]
        r = subprocess.run([sys.executable, "-m", "csadmin.daemon", "keys", "revoke", "runtime", "--state-dir", csd.state_dir],
                           capture_output=True, text=True, cwd=ROOT)
        assert r.returncode == 0, r.stderr
        for frame in (b'{"v":1,"id":"\\ud800","op":"system.standby","args":{}}',
                      b'{"v":1,"id":"x","op":"system.standby","args":{"force":"\\ud800"}}'):
            assert _error(send(frame, socket=sock))["error"]["code"] == "PERMISSION_DENIED"
    finally:
        sock.close(0)
        ctx.term()
    _still_serving(csd)
    assert "audit_write_failed" not in csd.log()
    with csd.client() as admin:
        denied = [e for e in admin.audit_show() if e["name"] == "runtime"]
    assert [e["outcome"] for e in denied] == ["PERMISSION_DENIED", "PERMISSION_DENIED"]


@pytest.mark.own_csd
def test_a_change_with_a_lone_surrogate_is_refused_and_audited(csd, keys, send):
    """A denial whose args held a lone surrogate was not audited (audit_write_failed)."""
    frame = b'{"v":1,"id":"u","op":"system.standby","args":{"force":"\\udc00"}}'
    assert _error(send(frame, keys["viewer"]))["error"]["code"] == "BAD_REQUEST"
    _still_serving(csd)
    assert "audit_write_failed" not in csd.log()
    with csd.client() as admin:
        (entry,) = [e for e in admin.audit_show() if e["name"] == "viewer"]
    assert (entry["op"], entry["outcome"]) == ("system.standby", "BAD_REQUEST") and "surrogate" in entry["message"]


def test_numbers_beyond_64_bits_are_invalid_arguments(csd, keys, send):
    """audit.show with max_count >= 2**63 answered INTERNAL; a program's compile_time of 10**400
    killed csd."""
    body = _error(send(protocol.request("a", "audit.show", {"max_count": 2**63})))
    assert body["error"]["code"] == "INVALID_ARGUMENT" and body["id"] == "a"
    program = {"fingerprint": "f", "target_system": "CS2-0001", "execmode": "PIPELINED", "mode": "train",
               "compile_time": 10**400, "est_samples_per_sec": 1.0, "size_bytes": 1}
    body = _error(send(protocol.request("p", "run.program", {"run_id": "run-000001", "program": program}),
                       keys["operator"]))
    assert body["error"]["code"] == "INVALID_ARGUMENT"
    _still_serving(csd)


def test_a_multipart_flood_is_refused_not_echoed(csd, keys, send):
    """1,000 x 60 KB frames in one message were accepted and all 60 MB echoed back."""
    request = protocol.request("m", "system.show")
    reply = send([b"x" * 60_000] * 1000 + [request], keys["viewer"])
    body = _error(reply)
    assert body["error"]["code"] == "BAD_REQUEST" and "one frame" in body["error"]["message"]
    # A plain request on the same key still works, and gets one frame back.
    reply = send(request, keys["viewer"])
    assert len(reply) == 1 and json.loads(reply[0])["ok"] is True
    _still_serving(csd)
