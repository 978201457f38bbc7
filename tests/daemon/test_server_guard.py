"""The serving loop survives any exception raised while handling one request, or outside one:
the request is answered INTERNAL (no traceback on the wire), the failure is logged once with its
traceback, repeats are counted, and csd keeps serving (issue 10; the faults are injected by
tests/faulty_csd.py, since the decoder itself no longer lets a frame crash anything)."""

import json
import os

import pytest

from csadmin import errors
from tests.harness import wait_until


def _switch(d, fault: str, on: bool = True) -> None:
    path = os.path.join(d.dir, fault)
    if on:
        open(path, "w").close()
    else:
        os.unlink(path)


def _log_lines(d) -> list[dict]:
    return [json.loads(line) for line in d.log().splitlines() if line.startswith("{")]


def test_a_request_that_raises_is_answered_internal_and_logged_once(faulty_csd):
    d = faulty_csd.start()
    _switch(d, "crash-request")
    with d.client() as c:
        for _ in range(3):
            with pytest.raises(errors.Internal) as info:
                c.system_date()
            assert "carries on" in info.value.message and "Traceback" not in str(info.value)
        assert c.system_show()["state"] == "ACTIVE", "the next request is served"
    failures = [line for line in _log_lines(d) if line["event"] == "request_failed"]
    with_traceback = [line for line in failures if "KeyError" in line.get("exception", "")]
    assert len(with_traceback) == 1, "the traceback is logged once"
    assert "fault injected" in with_traceback[0]["exception"]
    assert d.proc.poll() is None


def test_a_failure_outside_any_request_is_logged_and_the_loop_carries_on(faulty_csd):
    d = faulty_csd.start()
    _switch(d, "crash-tick")
    wait_until(lambda: any(line["event"] == "loop_failed" for line in _log_lines(d)), what="the failure logged")
    with d.client() as c:
        assert c.system_show()["state"] == "ACTIVE"
    _switch(d, "crash-tick", on=False)
    with d.client() as c:
        c.system_standby()
        assert c.wait_for(state="STANDBY", timeout=10)["state"] == "STANDBY", "timers run again"
    failures = [line for line in _log_lines(d) if line["event"] == "loop_failed"]
    assert sum("exception" in line for line in failures) == 1
    assert len(failures) < 30, "repeats are rate-limited, not one line per loop turn"
