"""`cs fleet execmode setup`: the admin's standby → setup → activate rolled over real csd, each
outcome (done, skipped for a held fabric, failed: stopped csd, critical fault), --keep-going,
--force, at most K at once, and Ctrl-C (SIGINT to the real `cs`) letting the started finish."""

from __future__ import annotations

import json
import signal

import pytest

from tests.csadmin.fleet import Fleet, four_systems
from tests.harness import Daemon, wait_until

SWITCH = ("fleet", "execmode", "setup", "--mode", "weight-streaming", "--no-confirm")


@pytest.fixture
def site():
    fleet, (runtime, run) = four_systems()
    fleet.run = run
    yield fleet
    runtime.close()
    fleet.cleanup()


def show(daemon: Daemon) -> dict:
    with daemon.client() as c:
        return c.system_show()


def outcomes(done) -> dict:
    return {s["system"]: s for s in json.loads(done.stdout)["systems"]}


def test_keep_going_reports_each_outcome_with_its_reason(site):
    done = site.cs(*SWITCH, "--systems", "up,down,busy,sick", "--max-parallel", "2", "--keep-going",
                   "--output-format", "json")
    got = outcomes(done)
    assert done.returncode == 7, done.stderr  # the first failure's: `down` is unreachable
    assert (got["up"]["outcome"], got["up"]["reason"]) == ("done", "ACTIVE in WEIGHT_STREAMING")
    assert got["down"]["outcome"] == "failed" and got["down"]["code"] == "UNREACHABLE"
    assert "No connection file" in got["down"]["reason"]
    assert got["busy"]["outcome"] == "skipped" and got["busy"]["code"] == "BUSY"
    assert "run run-000001 (owner job-7) holds the fabric; --force aborts it" == got["busy"]["reason"]
    assert got["sick"]["outcome"] == "failed" and got["sick"]["code"] == "FAULT_ACTIVE"
    up, busy, sick = (show(site.daemons[n]) for n in ("up", "busy", "sick"))
    assert (up["state"], up["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING")
    assert (busy["state"], busy["activeExecmode"], busy["runHolder"]["owner"]) == ("ACTIVE", "PIPELINED", "job-7")
    # The faulted one got as far as csd let it: in STANDBY, configured, activation refused.
    assert (sick["state"], sick["configuredExecmode"]) == ("STANDBY", "WEIGHT_STREAMING")
    # Text: progress tagged per system on stderr, the summary on stdout.
    assert "up   │ standby (ACTIVE)" in done.stderr and "busy │ skipped: run run-000001" in done.stderr


def test_the_first_failure_stops_starting_systems_and_the_summary_says_why(site):
    done = site.cs(*SWITCH, "--systems", "up,down,sick")
    assert done.returncode == 7, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Execution mode WEIGHT_STREAMING:"
    rows = {line.split()[0]: line.split(None, 3) for line in lines[2:5]}
    assert rows["up"][1] == "done" and rows["down"][1] == "failed"
    assert rows["sick"][1:] == ["skipped", "-", "not started: down failed"]
    assert lines[-1] == "1 done, 1 skipped, 1 failed."
    assert show(site.daemons["sick"])["state"] == "ACTIVE"  # never touched


def test_force_aborts_the_run_holding_the_fabric_and_a_system_already_in_the_mode_is_done(site):
    first = site.cs(*SWITCH, "--systems", "busy,up", "--force", "--output-format", "json")
    assert first.returncode == 0, first.stdout + first.stderr
    assert {n: o["outcome"] for n, o in outcomes(first).items()} == {"busy": "done", "up": "done"}
    assert site.run.show()["status"] == "ABORTED"
    again = site.cs(*SWITCH, "--systems", "up", "--output-format", "json")
    assert outcomes(again)["up"]["reason"] == "already ACTIVE in WEIGHT_STREAMING; nothing to do"


def test_only_skips_exit_4_and_a_script_must_say_no_confirm(site):
    skipped = site.cs(*SWITCH, "--systems", "busy")
    assert skipped.returncode == 4 and "0 done, 1 skipped, 0 failed." in skipped.stdout
    asked = site.cs("fleet", "execmode", "setup", "--mode", "PIPELINED", "--systems", "up")
    assert asked.returncode == 2 and "needs --no-confirm" in asked.stderr
    whole = site.cs(*SWITCH)
    assert whole.returncode == 2 and "--systems a,b,c" in whole.stderr
    unknown = site.cs(*SWITCH, "--systems", "up,upp")
    assert unknown.returncode == 6 and "Did you mean `up`?" in unknown.stderr
    bad_mode = site.cs("fleet", "execmode", "setup", "--mode", "fast", "--systems", "up", "--no-confirm")
    assert bad_mode.returncode == 2


def _busy_intervals(daemon: Daemon) -> tuple[int, int]:
    with daemon.client() as c:
        events = c.events_show()
    start = min(e["triggerTime"] for e in events if e["type"] == "EventStandbyIssued")
    end = max(e["triggerTime"] for e in events if e["type"] == "EventActivateCompleted")
    return start, end


def test_never_more_than_k_at_once(make_csd):
    daemons = {f"s{i}": make_csd(activate_seconds=0.4, standby_seconds=0.4).start() for i in range(4)}
    fleet = Fleet(daemons)
    try:
        done = fleet.cs(*SWITCH, "--systems", "s0,s1,s2,s3", "--max-parallel", "2")
        assert done.returncode == 0, done.stderr
        spans = [_busy_intervals(d) for d in daemons.values()]
        moments = sorted({t for span in spans for t in span})
        at_once = max(sum(1 for s, e in spans if s <= t < e) for t in moments)
        assert at_once == 2, spans
    finally:
        fleet.cleanup()


def test_ctrl_c_starts_no_more_systems_and_lets_the_started_one_finish(make_csd):
    daemons = {f"s{i}": make_csd(activate_seconds=1.0, standby_seconds=1.0).start() for i in range(3)}
    fleet = Fleet(daemons)
    try:
        proc = fleet.popen(*SWITCH, "--systems", "s0,s1,s2", "--output-format", "json")
        seen = []
        wait_until(lambda: seen.append(proc.stderr.readline()) or "s0 │ standby" in seen[-1], 30,
                   interval=0, what="s0 to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "Interrupted: no more systems will be started; waiting for s0 to finish." in err
        got = {s["system"]: s for s in json.loads(out)["systems"]}
        assert json.loads(out)["interrupted"] is True
        assert got["s0"]["outcome"] == "done"
        assert [got[n]["reason"] for n in ("s1", "s2")] == ["not started: interrupted"] * 2
        assert (show(daemons["s0"])["state"], show(daemons["s0"])["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING")
        assert show(daemons["s1"])["activeExecmode"] == "PIPELINED"
    finally:
        fleet.cleanup()


def test_a_person_at_a_terminal_is_asked_once_and_no_changes_nothing(site):
    import sys

    import pexpect

    from tests.harness import ROOT

    def ask(answer: str) -> tuple[str, int]:
        child = pexpect.spawn(sys.executable, ["-m", "csadmin", "fleet", "execmode", "setup", "--mode",
                                               "WEIGHT_STREAMING", "--systems", "up,sick"],
                              env=site.env(), cwd=ROOT, encoding="utf-8", timeout=30)
        child.expect(r"This puts 2 system\(s\) \(up, sick\) in standby and activates them in Weight Streaming mode, "
                     r"1 at a time\. Do you want to proceed\? \[y/N\] ")
        child.sendline(answer)
        child.expect(pexpect.EOF)
        child.close()
        return child.before, child.exitstatus

    said, code = ask("n")
    assert code == 1 and "Cancelled; nothing was changed." in said
    assert show(site.daemons["up"])["state"] == "ACTIVE"
    said, code = ask("y")
    assert code == 3 and "1 done, 0 skipped, 1 failed." in said  # `sick`'s critical fault refuses activate
    assert show(site.daemons["up"])["activeExecmode"] == "WEIGHT_STREAMING"
