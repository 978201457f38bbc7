"""Every malformed request gets a coded error (or, for an oversize frame, the documented drop)
and the daemon keeps serving."""

import json
import uuid

import pytest
import zmq

from csadmin import errors
from csadmin.shared import protocol

# Refusals change nothing, so the tests share one csd; the retry test restarts csd: its own.
pytestmark = pytest.mark.shared_csd


@pytest.fixture
def raw(csd):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, uuid.uuid4().hex.encode())
    csd.secure(sock)
    sock.connect(csd.endpoint)

    def send(frame: bytes, expect_reply: bool = True):
        sock.send(frame)
        if not expect_reply:
            return None
        assert sock.poll(10_000, zmq.POLLIN), "no reply"
        return json.loads(sock.recv())

    yield send
    sock.close(0)
    ctx.term()
    # Whatever was sent, the daemon still serves.
    with csd.client() as c:
        assert c.system_show()["systemType"] == "cs2"


def _request(op="system.show", args=None, **envelope):
    msg = {"v": 1, "id": "r1", "op": op, "args": args if args is not None else {}}
    msg.update(envelope)
    return json.dumps(msg).encode()


@pytest.mark.parametrize(
    "frame, code",
    [
        (b"{not json", "BAD_REQUEST"),
        (b"\xff\xfe\x00", "BAD_REQUEST"),
        (b"[1, 2]", "BAD_REQUEST"),
        (b'"just a string"', "BAD_REQUEST"),
        (json.dumps({"v": 1, "op": "system.show"}).encode(), "BAD_REQUEST"),  # no id
        (_request(args=[1]), "BAD_REQUEST"),
        (_request(extra=1), "BAD_REQUEST"),
        (_request(v=99), "UNSUPPORTED_VERSION"),
        (_request(op="system.reboot"), "UNKNOWN_OP"),
        (_request(op=""), "BAD_REQUEST"),
        (_request(op="config.execmode.setup"), "INVALID_ARGUMENT"),  # missing mode
        (_request(op="config.execmode.setup", args={"mode": 3}), "INVALID_ARGUMENT"),
        (_request(op="config.execmode.setup", args={"mode": "TURBO"}), "INVALID_ARGUMENT"),
        (_request(op="system.show", args={"colour": "red"}), "INVALID_ARGUMENT"),
        (_request(op="system.show", args={"detailed": 1}), "INVALID_ARGUMENT"),
        (_request(op="events.show", args={"max_count": -1}), "INVALID_ARGUMENT"),
        (_request(op="events.show", args={"max_count": True}), "INVALID_ARGUMENT"),
        (_request(op="events.show", args={"from_time": "yesterday"}), "INVALID_ARGUMENT"),
    ],
)
def test_bad_request_gets_coded_error(raw, frame, code):
    reply = raw(frame)
    assert reply["ok"] is False
    assert reply["error"]["code"] == code
    assert reply["error"]["code"] in errors.WIRE_CODES
    assert reply["error"]["message"]
    assert "Traceback" not in json.dumps(reply)


def test_error_reply_echoes_request_id(raw):
    reply = raw(_request(op="nope"))
    assert reply["id"] == "r1" and reply["v"] == 1


def test_oversize_frame_is_dropped_and_daemon_carries_on(raw, csd):
    raw(b"x" * (protocol.MAX_FRAME_BYTES + 1), expect_reply=False)
    # The daemon-side drop is documented: no reply; the fixture checks it still serves.


def test_refusal_is_coded_with_hint(csd):
    with csd.client() as c:
        with pytest.raises(errors.InvalidState) as info:
            c.execmode_setup("WEIGHT_STREAMING")
    assert "STANDBY" in info.value.message and "system standby" in info.value.hint


@pytest.mark.own_csd
def test_retry_with_same_id_replays_first_reply(csd):
    """A retried mutating request (same client, same id) is answered with its first reply and
    changes nothing twice, even across a daemon crash."""
    ctx = zmq.Context()
    identity = b"retrying-client"

    def send(frame):
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.ROUTING_ID, identity)
        csd.secure(sock)
        sock.connect(csd.endpoint)
        sock.send(frame)
        assert sock.poll(10_000, zmq.POLLIN)
        reply = sock.recv()
        sock.close(0)
        return reply

    try:
        frame = protocol.request("same-id", "system.standby")
        first = send(frame)
        assert json.loads(first)["result"]["changed"] is True
        with csd.client() as c:
            c.wait_for(state="STANDBY", timeout=10)
            c.system_activate()
            c.wait_for(state="ACTIVE", timeout=10)
        # The retry does not put the system back in standby.
        assert send(frame) == first
        csd.kill9()
        csd.start()
        assert send(frame) == first
        with csd.client() as c:
            assert c.system_show()["state"] == "ACTIVE"
            assert len(c.events_show(event_type="EventStandbyIssued")) == 1
    finally:
        ctx.term()
