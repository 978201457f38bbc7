"""Following csd's events, none skipped (csadmin/clientlib/follow.py): the one loop behind wait_for, a
run's programming wait, `events follow` and the shell's watcher, against a real csd."""

import time


def _collect(stream, until_seq: int, timeout: float = 20.0) -> list[dict]:
    got, deadline = [], time.monotonic() + timeout
    while (not got or got[-1]["seq"] < until_seq) and time.monotonic() < deadline:
        got += stream.next(0.2)
    return got


def _standby(c) -> None:
    c.system_standby()
    c.wait_for(state="STANDBY", timeout=10)


def test_what_happened_before_the_subscription_held_is_filled_from_the_log(csd):
    with csd.client() as c:
        start = c.system_show()["seq"]
        _standby(c)
        end = c.system_show()["seq"]
        # A follower that starts from before those events: its subscription never saw them.
        with c.follow(after_seq=start) as stream:
            got = _collect(stream, end)
        assert [e["seq"] for e in got] == list(range(start + 1, end + 1))
        assert [e["type"] for e in got][:2] == ["EventStandbyIssued", "EventPendingStandby"]


def test_an_event_that_arrives_past_a_gap_brings_the_gap_with_it(csd):
    with csd.client() as c:
        start = c.system_show()["seq"]
        _standby(c)
        with c.follow(after_seq=start) as stream:
            c.execmode_setup("WEIGHT_STREAMING")  # arrives live, seqs past the standby's
            end = c.system_show()["seq"]
            got = _collect(stream, end)
        assert [e["seq"] for e in got] == list(range(start + 1, end + 1))
        assert got[-1]["type"] == "EventConfigOpCompleted"


def test_live_events_come_in_order_and_once(csd):
    with csd.client() as c, c.follow() as stream:
        start = stream.last_seq
        _standby(c)
        for mode in ("WEIGHT_STREAMING", "PIPELINED", "WEIGHT_STREAMING"):
            c.execmode_setup(mode)
        end = c.system_show()["seq"]
        got = _collect(stream, end)
        assert [e["seq"] for e in got] == list(range(start + 1, end + 1))
        assert stream.next(0.3) == []  # nothing more happened
