"""The fault ops and `cs system fault …` against a real csd: roles, audit, durability across a
kill -9, bad input, transition faults over the wire, scenario files (`cs system fault scenario`,
`csd --faults`), and what the console prints.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from csadmin import errors
from tests.harness import ROOT, Daemon, wait_until

SCENARIO = '''description = "a pump goes missing"
[[fault]]
name = "pump-missing"
at = 0.2
for = 60
'''


@pytest.fixture
def csd():
    daemon = Daemon().start()
    yield daemon
    daemon.cleanup()


def test_only_admins_inject_and_clear_and_viewers_read_the_list(csd):
    viewer, operator = csd.add_key("viewer", "viewer"), csd.add_key("operator", "operator")
    for key in (viewer, operator):
        with csd.client(key=key) as c:
            with pytest.raises(errors.PermissionDenied, match="needs the admin role"):
                c.fault_inject("pump-missing")
            with pytest.raises(errors.PermissionDenied):
                c.fault_clear(all=True)
            with pytest.raises(errors.PermissionDenied):
                c.fault_scenario(SCENARIO)
    with csd.client(key=viewer) as c:
        listing = c.fault_list()
    assert listing["faults"] == [] and listing["scenario"] is None
    assert {f["name"] for f in listing["catalogue"]} >= {"temperature-high-warn", "psu-hardware-error",
                                                         "emergency-shutdown", "activate-fails"}


def test_every_injection_is_audited_and_a_bad_request_is_refused_with_a_clear_code(csd):
    with csd.client() as c:
        with pytest.raises(errors.InvalidArgument, match="did you mean temperature-high-warn"):
            c.fault_inject("temperature-hi-warn")
        with pytest.raises(errors.InvalidArgument, match="for_seconds"):
            c.fault_inject("pump-missing", for_seconds=-1)
        with pytest.raises(errors.InvalidArgument, match="exactly one"):
            c.call("system.fault.clear", name="pump-missing", all=True)
        with pytest.raises(errors.NotFound, match="present: none"):
            c.fault_clear("pump-missing")
        c.fault_inject("pump-missing", for_seconds=30)
        c.fault_clear("pump-missing")
        audit = c.audit_show()
    ops = [(a["op"], a["outcome"]) for a in audit if a["op"].startswith("system.fault")]
    assert ops == [("system.fault.inject", "INVALID_ARGUMENT"), ("system.fault.inject", "INVALID_ARGUMENT"),
                   ("system.fault.clear", "INVALID_ARGUMENT"), ("system.fault.clear", "NOT_FOUND"),
                   ("system.fault.inject", "ok"), ("system.fault.clear", "ok")]
    csd.stop()


def test_an_acknowledged_fault_survives_kill_9_and_expires_on_time_after(csd):
    with csd.client() as c:
        c.fault_inject("flow-rate-low-warn", for_seconds=2)
        c.fault_inject("standby-fails")
    csd.kill9()
    csd.start()
    with csd.client() as c:
        faults = {f["name"]: f["status"] for f in c.system_show()["activeFaults"]}
        assert faults == {"flow-rate-low-warn": "active", "standby-fails": "armed"}
        assert c.wait_for(health="OK", timeout=30)["activeFaults"][0]["name"] == "standby-fails"
        ok = c.events_show(event_type="EventHealthOk")
        assert ok[-1]["details"]["fault"] == "flow-rate-low-warn" and ok[-1]["details"]["injected"] is True


def test_a_failed_standby_is_reported_to_the_waiting_console_and_the_retry_succeeds(csd):
    with csd.client() as c:
        c.fault_inject("standby-fails")
    failed = csd.cs("system", "standby", "--no-confirm")
    assert failed.returncode == errors.EXIT_STATE, failed.stdout + failed.stderr
    assert "did not reach STANDBY" in failed.stderr and "standby-fails" in failed.stderr
    shown = json.loads(csd.cs("system", "show", "--output-format", "json").stdout)
    assert shown["state"] == "ACTIVE" and shown["systemHealth"] == "CRITICAL"
    again = csd.cs("system", "standby", "--no-confirm")
    assert again.returncode == 0, again.stderr
    events = [e["type"] for e in json.loads(csd.cs("events", "show", "--output-format", "json").stdout)["events"]]
    assert events[-3:] == ["EventEnteredStandby", "EventStandbyCompleted", "EventHealthOk"]
    assert "EventStandbyFailed" in events


def test_a_failed_execmode_change_is_refused_with_its_events_kept(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=30)
        c.fault_inject("execmode-fails")
        with pytest.raises(errors.TransitionFailed) as failed:
            c.execmode_setup("WEIGHT_STREAMING")
        assert failed.value.fault == "execmode-fails" and "still PIPELINED" in failed.value.message
        assert c.execmode_show()["execmode"] == "PIPELINED"
        kinds = [e["type"] for e in c.events_show(max_count=3)]
        assert kinds == ["EventConfigOpIssued", "EventSetExecModeFailed", "EventConfigOpFailed"]
        assert c.audit_show()[-1]["outcome"] == "TRANSITION_FAILED"
        assert c.execmode_setup("WEIGHT_STREAMING")["changed"] is True  # the retry succeeds
        assert c.system_show()["systemHealth"] == "STANDBY"


def test_the_console_injects_lists_shows_and_clears_faults(csd):
    injected = csd.cs("system", "fault", "inject", "temperature-high-warn", "--for", "60", "--no-confirm")
    assert injected.returncode == 0, injected.stderr
    assert "temperature-high-warn is injected" in injected.stdout and "systemHealth DEGRADED" in injected.stdout
    shown = csd.cs("system", "show").stdout
    assert "temperature-high-warn (active, DEGRADED, injected)" in shown
    listing = csd.cs("system", "fault", "list").stdout
    assert "systemHealth DEGRADED" in listing and "psu-hardware-error" in listing
    events = csd.cs("events", "show", "--event-type", "EventSensor*").stdout
    assert "EventSensorTemperatureHighWarn (injected)" in events
    refused = csd.cs("system", "fault", "inject", "temperature-high-warn")
    assert refused.returncode == errors.EXIT_USAGE and "--no-confirm" in refused.stderr
    missing = csd.cs("system", "fault", "clear", "--no-confirm")
    assert missing.returncode == errors.EXIT_USAGE and "--all" in missing.stderr
    cleared = csd.cs("system", "fault", "clear", "--all", "--no-confirm", "--output-format", "json")
    assert cleared.returncode == 0 and json.loads(cleared.stdout)["systemHealth"] == "OK"
    unknown = csd.cs("system", "fault", "inject", "psu", "--no-confirm")
    assert unknown.returncode == errors.EXIT_USAGE and "known faults" in unknown.stderr


def test_cs_loads_a_scenario_file_and_a_bad_one_names_its_lines(csd, tmp_path):
    good = tmp_path / "pump.toml"
    good.write_text(SCENARIO)
    loaded = csd.cs("system", "fault", "scenario", str(good), "--no-confirm")
    assert loaded.returncode == 0, loaded.stderr
    assert "pump-missing 0.2 s after the scenario is loaded, for 60 s" in loaded.stdout
    with csd.client() as c:
        wait_until(lambda: c.system_show()["systemHealth"] == "MISSING", 30, what="the scenario's fault")
        assert c.fault_list()["scenario"]["source"] == "pump.toml"
    bad = tmp_path / "bad.toml"
    bad.write_text('[[fault]]\nname = "pump-missing"\n\n[[fault]]\nname = "nope"\nat = 1\n')
    refused = csd.cs("system", "fault", "scenario", str(bad), "--no-confirm")
    assert refused.returncode == errors.EXIT_USAGE
    assert "bad.toml, line 1" in refused.stderr and "bad.toml, line 5" in refused.stderr


def test_csd_faults_loads_at_start_and_a_restart_carries_on_rather_than_replaying(tmp_path):
    scenario = tmp_path / "late.toml"
    scenario.write_text('[[fault]]\nname = "pump-missing"\nat = 3600\n')
    daemon = Daemon(extra_args=["--faults", str(scenario)]).start()
    try:
        with daemon.client() as c:
            [step] = c.fault_list()["faults"]
        daemon.kill9()
        daemon.start()
        with daemon.client() as c:
            assert c.fault_list()["faults"][0]["due"] == step["due"]  # the same schedule, not a new one
        assert "fault_scenario_kept" in daemon.log()
    finally:
        daemon.cleanup()


def test_csd_refuses_to_start_with_a_bad_scenario_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[fault]]\nname = "psu-hardware-eror"\nat = 1\n')
    daemon = Daemon(extra_args=["--faults", str(bad)])
    try:
        done = subprocess.run(daemon.command(), capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert done.returncode == 2
        assert f"{bad}, line 2" in done.stderr and "did you mean psu-hardware-error" in done.stderr
    finally:
        daemon.cleanup()


def test_a_taken_metrics_port_stops_csd_from_starting():
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    daemon = Daemon(extra_args=["--metrics-endpoint", str(taken.getsockname()[1])])
    try:
        daemon.spawn()
        assert daemon.proc.wait(timeout=60) == 1
        assert "cannot_start" in daemon.log() and "Address already in use" in daemon.log()
    finally:
        taken.close()
        daemon.cleanup()


def test_the_fault_ops_are_documented_in_their_modules():
    from csadmin.daemon.commands import COMMANDS

    for op in ("system.fault.inject", "system.fault.clear", "system.fault.list", "system.fault.scenario"):
        assert op in COMMANDS[op].__doc__ and "result:" in COMMANDS[op].__doc__
    assert os.path.exists(os.path.join(ROOT, "examples", "faults", "warm-then-psu.toml"))
