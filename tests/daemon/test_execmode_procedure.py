"""The admin's five-step execution-mode procedure against a real csd, through the client and
through one-shot `cs`, plus what must survive restarts and crashes."""

import json
import os

from csadmin import errors


def test_five_steps_through_the_client(csd):
    with csd.client() as c:
        assert c.execmode_show()["execmode"] == "PIPELINED"
        assert c.system_standby()["state"] == "PENDING_STANDBY"
        assert c.wait_for(state="STANDBY", timeout=10)["systemHealth"] == "STANDBY"
        result = c.execmode_setup("WEIGHT_STREAMING")
        assert result["execmode"] == "WEIGHT_STREAMING" and result["takesEffectOnActivate"] is True
        assert c.system_activate()["state"] == "PENDING_ACTIVE"
        snap = c.wait_for(state="ACTIVE", execmode="WEIGHT_STREAMING", timeout=10)
        assert snap["systemHealth"] == "OK"
        assert snap["configuredExecmode"] == "WEIGHT_STREAMING"
        types = [e["type"] for e in c.events_show()]
        assert types == [
            "EventStandbyIssued", "EventPendingStandby", "EventEnteredStandby", "EventStandbyCompleted",
            "EventConfigOpIssued", "EventSetExecModeWeightStreaming", "EventConfigOpCompleted",
            "EventActivateIssued", "EventPendingActive", "EventEnteredActive", "EventActivateCompleted",
        ]


def test_five_steps_through_one_shot_cs(csd):
    r = csd.cs("config", "execmode", "show")
    assert r.returncode == 0 and r.stdout.strip() == "Configured Execution Mode : PIPELINED"

    r = csd.cs("system", "standby", "--no-confirm")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "System is in STANDBY."

    r = csd.cs("config", "execmode", "setup", "--mode", "weight-streaming", "--no-confirm")
    assert r.returncode == 0, r.stderr
    assert "Selected execution mode configuration: ✔ Weight Streaming" in r.stdout

    r = csd.cs("config", "execmode", "show")
    assert r.stdout.splitlines()[0] == "Configured Execution Mode : WEIGHT_STREAMING"
    assert "Active Execution Mode     : PIPELINED" in r.stdout

    r = csd.cs("system", "activate", "--no-confirm")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "System is ACTIVE in WEIGHT_STREAMING."

    r = csd.cs("--output-format", "json", "system", "show")
    snap = json.loads(r.stdout)
    assert (snap["state"], snap["systemHealth"], snap["systemType"], snap["activeExecmode"]) == (
        "ACTIVE", "OK", "cs2", "WEIGHT_STREAMING")
    r = csd.cs("config", "execmode", "show", "--output-format", "json")
    assert json.loads(r.stdout)["execmode"] == "WEIGHT_STREAMING"


def test_one_shot_exit_codes(csd):
    # Refused by state: the execution mode only changes in STANDBY; the message says what to do.
    r = csd.cs("config", "execmode", "setup", "--mode", "pipelined", "--no-confirm")
    assert r.returncode == errors.EXIT_STATE
    assert "only be changed in STANDBY" in r.stderr and "system standby" in r.stderr
    # A state change without --no-confirm and no terminal: refused as usage, nothing changes.
    r = csd.cs("system", "standby")
    assert r.returncode == errors.EXIT_USAGE and "--no-confirm" in r.stderr
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"
    # Usage errors: unknown command, unknown option, unknown mode (rejected by the daemon).
    assert csd.cs("sytem", "show").returncode == errors.EXIT_USAGE
    assert csd.cs("system", "show", "--bogus").returncode == errors.EXIT_USAGE
    csd.cs("system", "standby", "--no-confirm")
    r = csd.cs("config", "execmode", "setup", "--mode", "turbo", "--no-confirm")
    assert r.returncode == errors.EXIT_USAGE and "PIPELINED, WEIGHT_STREAMING" in r.stderr
    # Idempotent repeat succeeds.
    r = csd.cs("system", "standby", "--no-confirm")
    assert r.returncode == 0 and "System is already in STANDBY." in r.stdout


def test_unreachable_daemon_exit_code(tmp_path):
    from tests.harness import Daemon

    d = Daemon()
    r = d.cs("--endpoint", f"ipc://{tmp_path}/none.sock", "system", "show")
    assert r.returncode == errors.EXIT_UNREACHABLE
    assert "not listening" in r.stderr
    d.cleanup()


def test_a_clean_stop_takes_its_sockets_and_connection_file_along(csd):
    # libzmq leaves ipc socket files behind; csd removes them, so `cs` says at once that csd
    # is not running instead of trying a dead socket (the unit keeps /run/csd across a stop).
    files = [csd.endpoint[len("ipc://"):], csd.events_endpoint[len("ipc://"):], csd.connection_file]
    assert all(os.path.exists(f) for f in files)
    assert csd.stop() == 0
    assert [f for f in files if os.path.exists(f)] == []
    r = csd.cs("--endpoint", csd.endpoint, "system", "show")
    assert r.returncode == errors.EXIT_UNREACHABLE and f"csd is not listening at {csd.endpoint}" in r.stderr


def test_restart_keeps_configured_mode_and_events(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        c.execmode_setup("WEIGHT_STREAMING")
        seq = c.system_show()["seq"]
    csd.restart()
    with csd.client() as c:
        snap = c.system_show()
        assert (snap["state"], snap["configuredExecmode"], snap["activeExecmode"]) == (
            "STANDBY", "WEIGHT_STREAMING", "PIPELINED")
        assert snap["seq"] == seq
        c.system_activate()
        assert c.events_show()[-1]["seq"] > seq  # seq continues, never repeats


def test_kill9_during_pending_active_rolls_forward(make_csd):
    # Long activation so the kill surely lands while PENDING_ACTIVE.
    csd = make_csd(activate_seconds=600).start()
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        c.execmode_setup("WEIGHT_STREAMING")
        assert c.system_activate()["state"] == "PENDING_ACTIVE"
    csd.kill9()
    csd.start()
    with csd.client() as c:
        # Resolved before the daemon answered anything.
        snap = c.system_show()
        assert (snap["state"], snap["activeExecmode"], snap["pendingUntil"]) == ("ACTIVE", "WEIGHT_STREAMING", None)
        completed = c.events_show(event_type="EventActivateCompleted")
        assert completed[-1]["details"]["recovered"] is True


def test_kill9_during_pending_standby_rolls_forward(make_csd):
    csd = make_csd(standby_seconds=600).start()
    with csd.client() as c:
        c.system_standby()
    csd.kill9()
    csd.start()
    with csd.client() as c:
        assert c.system_show()["state"] == "STANDBY"


def test_acknowledged_change_survives_kill9(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        c.execmode_setup("WEIGHT_STREAMING")  # acknowledged: must be on disk now
    csd.kill9()
    csd.start()
    with csd.client() as c:
        assert c.execmode_show()["execmode"] == "WEIGHT_STREAMING"


def test_sigterm_exits_cleanly(csd):
    assert csd.stop() == 0
    assert '"event": "stopping"' in csd.log()


def test_second_daemon_on_same_state_dir_is_refused(csd):
    import subprocess

    from tests.harness import Daemon

    other = Daemon()
    other.state_dir = csd.state_dir
    r = subprocess.run(other.command(), capture_output=True, text=True, timeout=30)
    other.cleanup()
    assert r.returncode == 1 and "Another csd is already using" in r.stdout
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"


def test_events_are_published_in_seq_order(make_csd):
    import zmq

    # A 1 s standby: the SUB connection joins asynchronously and must land before the
    # transition's last event; what it receives is then the tail of the sequence, in order.
    csd = make_csd(standby_seconds=1.0).start()
    with csd.client() as c:
        sub = c.subscribe()
        try:
            c.system_standby()
            seen = []
            while not seen or seen[-1]["type"] != "EventStandbyCompleted":
                assert sub.poll(10_000, zmq.POLLIN), f"no event; saw {seen}"
                topic, payload = sub.recv_multipart()
                event = json.loads(payload)
                assert topic.decode() == event["type"]
                seen.append(event)
        finally:
            sub.close(0)
    sequence = ["EventStandbyIssued", "EventPendingStandby", "EventEnteredStandby", "EventStandbyCompleted"]
    assert [e["type"] for e in seen] == sequence[-len(seen):]
    seqs = [e["seq"] for e in seen]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs))), "consecutive, no gap"
    assert {"seq", "type", "severity", "triggerTime", "details"} <= set(seen[-1])
