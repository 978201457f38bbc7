"""Scripted use: `cs -c` and `cs < file` with no terminal — no prompts, state changes need
--no-confirm, and the first failure stops the script with its exit code."""

import json
import signal
import subprocess
import sys

from csadmin import errors
from tests.harness import ROOT


def test_c_script_runs_every_command(csd):
    r = csd.cs("-c", "system standby --no-confirm; config execmode setup --mode pipelined --no-confirm; system show")
    assert r.returncode == 0, r.stderr
    assert "System is in STANDBY." in r.stdout and "State          : STANDBY" in r.stdout


def test_stdin_script_with_comments_and_blank_lines(csd):
    script = """
# put the system in weight streaming
system standby --no-confirm   # ramp down

config execmode setup --mode WEIGHT_STREAMING --no-confirm
system activate --no-confirm
"""
    r = csd.cs(input=script)
    assert r.returncode == 0, r.stderr
    assert r.stdout.rstrip().endswith("System is ACTIVE in WEIGHT_STREAMING.")


def test_state_change_without_no_confirm_is_refused_and_stops_the_script(csd):
    r = csd.cs("-c", "system standby; system show")
    assert r.returncode == errors.EXIT_USAGE
    assert "needs --no-confirm" in r.stderr
    assert "systemHealth" not in r.stdout, "nothing after the failure runs"
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"


def test_first_failure_is_the_exit_code(csd):
    r = csd.cs(input="system show\nconfig execmode setup --mode pipelined --no-confirm\nsystem standby --no-confirm\n")
    assert r.returncode == errors.EXIT_STATE
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE", "the standby after the failure never ran"


def test_bad_quoting_is_a_usage_error(csd):
    assert csd.cs("-c", 'events show --event-type "Event').returncode == errors.EXIT_USAGE


def test_every_output_command_speaks_json(csd):
    for args, keys in [
        (["system", "show"], {"systemHealth", "systemType", "state", "activeExecmode", "configuredExecmode", "seq"}),
        (["system", "show", "--detailed"], {"daemon"}),
        (["system", "date"], {"time", "iso"}),
        (["config", "execmode", "show"], {"execmode", "activeExecmode", "takesEffectOnActivate"}),
        (["events", "show", "--max-count", "2"], {"events"}),
        (["whoami"], {"name", "role", "session"}),
        (["system", "standby", "--no-confirm"], {"message", "changed", "system"}),
        (["config", "execmode", "setup", "--mode", "pipelined", "--no-confirm"], {"message", "changed", "execmode"}),
    ]:
        r = csd.cs("--output-format", "json", *args)
        assert r.returncode == 0, (args, r.stderr)
        assert keys <= set(json.loads(r.stdout)), args
    r = csd.cs("--output-format", "json", "config", "execmode", "setup", "--mode", "nope", "--no-confirm")
    assert r.returncode == errors.EXIT_USAGE
    # The console checks the mode itself (before a script's first line runs): a usage error.
    error = json.loads(r.stdout)["error"]
    assert error["code"] == "USAGE" and error["message"].startswith("--mode: unknown execution mode 'nope'")


def test_events_show_filters_like_the_real_cli(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        c.system_activate()
        c.wait_for(state="ACTIVE", timeout=10)
        t0 = c.events_show(event_type="EventActivateIssued")[0]["triggerTime"]
    r = csd.cs("--output-format", "json", "events", "show", "--event-type", "EventActivate*", "--from-time", str(t0),
               "--max-count", "5")
    types = [e["type"] for e in json.loads(r.stdout)["events"]]
    assert types == ["EventActivateIssued", "EventActivateCompleted"]
    assert any(t.endswith("Completed") for t in types), "scripts poll for *Completed"


def test_events_follow_prints_live_events_until_ctrl_c(csd):
    proc = subprocess.Popen(
        [sys.executable, "-m", "csadmin", "--output-format", "json", "events", "follow"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=csd.env(), cwd=ROOT,
    )
    try:
        assert proc.stderr.readline().startswith("Following events")
        with csd.client() as c:
            c.system_standby()
            c.wait_for(state="STANDBY", timeout=10)
        seen = []
        while "EventStandbyCompleted" not in seen:
            line = proc.stdout.readline()
            assert line, f"follow ended early: {proc.stderr.read()}"
            seen.append(json.loads(line)["type"])
        assert seen == ["EventStandbyIssued", "EventPendingStandby", "EventEnteredStandby", "EventStandbyCompleted"]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


def test_ctrl_c_during_a_one_shot_wait_exits_130_and_leaves_the_change_running(make_csd):
    """A script's `cs system standby --no-confirm` waits for STANDBY; Ctrl-C there stops the
    waiting (exit 130, "Stopped waiting; …carries on", no traceback), not the standby csd already accepted."""
    csd = make_csd(standby_seconds=30).start()
    proc = subprocess.Popen(
        [sys.executable, "-m", "csadmin", "system", "standby", "--no-confirm"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=csd.env(), cwd=ROOT,
    )
    try:
        assert proc.stdout.readline().startswith("System is going to STANDBY")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == errors.EXIT_INTERRUPTED, (out, err)
        assert "Stopped waiting; the system carries on to STANDBY." in err and "`events follow`" in err
        assert "Traceback" not in err and "Error" not in err
    finally:
        proc.kill()
        proc.wait()
    with csd.client() as c:
        assert c.system_show()["state"] == "PENDING_STANDBY", "the standby carries on"
