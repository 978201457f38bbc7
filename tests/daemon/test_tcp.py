"""Remote runtimes: csd can also serve requests and events on TCP, and a client that reaches it
over TCP subscribes to the TCP events endpoint (never the local ipc one it cannot reach)."""

import json

import pytest

from csadmin.shared import connection
from csadmin.client import Client


@pytest.mark.parametrize(
    "request_endpoint, advertised, expected",
    [
        ("tcp://cs2-mgmt:9000", "tcp://0.0.0.0:9001", "tcp://cs2-mgmt:9001"),
        ("tcp://10.1.2.3:9000", "tcp://*:9001", "tcp://10.1.2.3:9001"),
        ("tcp://[fd00::5]:9000", "tcp://[::]:9001", "tcp://[fd00::5]:9001"),
        ("tcp://cs2-mgmt:9000", "tcp://10.0.0.7:9001", "tcp://10.0.0.7:9001"),
        ("ipc:///run/csd/csd.sock", "tcp://0.0.0.0:9001", "ipc:///run/csd/ev.sock"),
        ("tcp://cs2-mgmt:9000", "", "ipc:///run/csd/ev.sock"),
    ],
)
def test_events_endpoint_for(request_endpoint, advertised, expected):
    hello = {"eventsEndpoint": "ipc:///run/csd/ev.sock", "tcpEventsEndpoint": advertised}
    assert connection.events_endpoint_for(request_endpoint, hello) == expected


def test_a_tcp_client_is_served_and_follows_events_over_tcp(make_csd):
    csd = make_csd(extra_args=["--tcp-endpoint", "tcp://127.0.0.1:*", "--tcp-events-endpoint", "tcp://127.0.0.1:*"])
    csd.start()
    ready = next(json.loads(line) for line in csd.log().splitlines() if '"event": "ready"' in line)
    server_key = csd.connection()["server_key"]  # a remote runtime is given it (CURVE on TCP too)
    with Client(ready["tcp_endpoint"], timeout=10, server_key=server_key, key=csd.admin_key) as c:
        hello = c.hello()
        assert hello["tcpEventsEndpoint"] == ready["tcp_events_endpoint"]
        assert c.events_endpoint() == ready["tcp_events_endpoint"]
        c.system_standby()
        # wait_for is woken by the event stream: it must be the TCP one.
        assert c.wait_for(state="STANDBY", timeout=20)["state"] == "STANDBY"


def test_without_tcp_the_hello_says_so(csd):
    with csd.client() as c:
        assert c.hello()["tcpEventsEndpoint"] == ""
        assert c.events_endpoint() == csd.events_endpoint
