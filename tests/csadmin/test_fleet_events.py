"""`cs fleet events follow`: every system's events in one stream, tagged, none skipped per
system; a system that is down is reported, and followed from where it was when it returns."""

from __future__ import annotations

import json
import signal
import threading

from tests.csadmin.fleet import Fleet
from tests.harness import wait_until


class Reader(threading.Thread):
    """Collects a process's stdout lines as they come."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.lines = stream, []

    def run(self) -> None:
        for line in self.stream:
            self.lines.append(line)

    def objects(self) -> list[dict]:
        return [json.loads(line) for line in list(self.lines)]

    def wait(self, predicate, what: str, timeout: float = 30) -> dict:
        return wait_until(lambda: next((o for o in self.objects() if predicate(o)), None), timeout, what=what)


def test_one_stream_tagged_per_system_with_systems_lost_and_back(make_csd):
    daemons = {name: make_csd(extra_args=["--serial", serial]).start()
               for name, serial in (("a", "CS2-0001"), ("b", "CS2-0002"), ("c", "CS2-0003"))}
    daemons["c"].stop()  # down from the start
    fleet = Fleet(daemons)
    proc = fleet.popen("fleet", "events", "follow", "--output-format", "json")
    reader = Reader(proc.stdout)
    reader.start()
    try:
        for name in ("a", "b"):
            reader.wait(lambda o, n=name: o.get("system") == n and o.get("status") == "following", f"{name} followed")
        lost = reader.wait(lambda o: o.get("system") == "c" and o.get("status") == "lost", "c reported lost")
        assert "No connection file" in lost["message"]

        assert fleet.cs("--system", "a", "system", "standby", "--no-confirm").returncode == 0
        assert fleet.cs("--system", "b", "system", "fault", "inject", "psu-hardware-error", "--no-confirm").returncode == 0
        reader.wait(lambda o: o.get("system") == "a" and o.get("type") == "EventStandbyCompleted", "a's standby")
        fault = reader.wait(lambda o: o.get("system") == "b" and o.get("type") == "EventPsuHardwareError", "b's fault")
        assert fault["details"]["injected"] is True and "seq" in fault and "severity" in fault

        # b goes away (the follower says so) and comes back: followed on from the last event it
        # handed out, so b's events form one unbroken run of seqs across the outage.
        daemons["b"].stop()
        reader.wait(lambda o: o.get("system") == "b" and o.get("status") == "lost", "b reported lost")
        daemons["b"].start()
        daemons["c"].start()
        back = reader.wait(lambda o: o.get("system") == "b" and o.get("status") == "back", "b reported back")
        assert "resuming after event" in back["message"]
        reader.wait(lambda o: o.get("system") == "c" and o.get("status") == "back", "c reported back")
        assert fleet.cs("--system", "b", "system", "fault", "clear", "--all", "--no-confirm").returncode == 0
        assert fleet.cs("--system", "c", "system", "standby", "--no-confirm").returncode == 0
        reader.wait(lambda o: o.get("system") == "b" and o.get("type") == "EventHealthOk", "b's clear")
        reader.wait(lambda o: o.get("system") == "c" and o.get("type") == "EventStandbyCompleted", "c's standby")
        for name in ("a", "b", "c"):
            seqs = [o["seq"] for o in reader.objects() if o.get("system") == name and "seq" in o]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), (name, seqs)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        reader.join(5)
        stderr = proc.stderr.read()
        fleet.cleanup()
    assert proc.returncode == 0, stderr
    assert "Stopped following events." in stderr


def test_text_lines_are_tagged_and_aligned(make_csd):
    daemons = {"alpha": make_csd().start(), "b": make_csd().start()}
    fleet = Fleet(daemons)
    proc = fleet.popen("fleet", "events", "follow", "--event-type", "EventStandby*")
    reader = Reader(proc.stdout)
    reader.start()
    try:
        wait_until(lambda: sum("-- following" in line for line in reader.lines) == 2, 30, what="both followed")
        assert fleet.cs("--system", "b", "system", "standby", "--no-confirm").returncode == 0
        line = wait_until(lambda: next((x for x in reader.lines if "EventStandbyCompleted" in x), None), 30,
                          what="b's standby")
        assert line.startswith("b     │ ")
        assert not any("EventActivate" in x for x in reader.lines)  # --event-type applies to every system
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
        fleet.cleanup()
    assert proc.returncode == 0
