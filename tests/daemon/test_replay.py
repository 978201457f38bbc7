"""Retries against a real csd: the replay cache is keyed on (client, id, op, canonical args), so
a reused id is refused and never answered with another request's reply (issue 10)."""

import json

import pytest
import zmq

from csadmin.shared import protocol


@pytest.fixture
def same_socket(csd):
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, b"one-client")
    csd.secure(sock)
    sock.connect(csd.endpoint)

    def send(request_id, op, args=None):
        sock.send(protocol.encode({"v": 1, "id": request_id, "op": op, "args": args or {}}))
        assert sock.poll(10_000, zmq.POLLIN), "no reply"
        return json.loads(sock.recv())

    yield send
    sock.close(0)
    ctx.term()


def test_a_refusal_is_not_replayed_for_another_op_with_the_same_id(csd, same_socket):
    """A refused mode change with id "X", then a standby with id "X": the standby was answered
    with the mode change's refusal and never ran."""
    first = same_socket("X", "config.execmode.setup", {"mode": "WEIGHT_STREAMING"})
    assert first["error"]["code"] == "INVALID_STATE"
    reused = same_socket("X", "system.standby")
    assert reused["ok"] is False and reused["error"]["code"] == "INVALID_ARGUMENT"
    assert "already used" in reused["error"]["message"]
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE", "nothing ran under the reused id"
    assert same_socket("X", "config.execmode.setup", {"mode": "WEIGHT_STREAMING"}) == first, "a true retry replays"


def test_integer_and_string_ids_never_share_a_reply(csd, same_socket):
    """Standby with id 7, then activate with id "7", was answered "System is going to STANDBY."."""
    standby = same_socket(7, "system.standby")
    assert standby["ok"] and standby["result"]["changed"] is True and standby["id"] == 7
    with csd.client() as c:
        c.wait_for(state="STANDBY", timeout=10)
    activate = same_socket("7", "system.activate")
    assert activate["ok"] and activate["id"] == "7"
    assert activate["result"]["message"].startswith("System is activating"), activate
    with csd.client() as c:
        c.wait_for(state="ACTIVE", timeout=10)
    assert same_socket(7, "system.standby") == standby, "the integer id still replays its own reply"


def test_reused_id_with_other_args_is_refused_across_a_restart(csd, same_socket):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
    first = same_socket("m", "config.execmode.setup", {"mode": "WEIGHT_STREAMING"})
    assert first["ok"] and first["result"]["changed"]
    csd.kill9()
    csd.start()
    assert same_socket("m", "config.execmode.setup", {"mode": "weight_streaming"})["error"]["code"] == "INVALID_ARGUMENT"
    assert same_socket("m", "config.execmode.setup", {"mode": "WEIGHT_STREAMING"}) == first
