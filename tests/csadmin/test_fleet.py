"""`cs inventory`, `cs --system NAME`, `$CS_SYSTEM` and `cs fleet show` against four real csd: one
fine, one stopped, one whose fabric a run holds, one with a critical fault (tests/csadmin/fleet.py)."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from tests.csadmin.fleet import Fleet, four_systems
from tests.harness import Daemon


@pytest.fixture(scope="module")
def site():
    fleet, (runtime, run) = four_systems()
    yield fleet
    run.close()
    runtime.close()
    fleet.cleanup()


def test_fleet_show_tables_every_system_and_exits_7_because_one_did_not_answer(site):
    done = site.cs("fleet", "show")
    assert done.returncode == 7, done.stderr
    rows = {line.split()[0]: line for line in done.stdout.splitlines()[1:5]}
    assert done.stdout.splitlines()[0].split()[:5] == ["SYSTEM", "SERIAL", "STATE", "HEALTH", "MODE"]
    assert rows["up"].split()[1:5] == ["CS2-0001", "ACTIVE", "OK", "PIPELINED"] and " yes " in rows["up"]
    assert rows["busy"].split()[1:3] == ["CS2-0003", "ACTIVE"] and "(job-7)" in rows["busy"]
    assert rows["sick"].split()[1:4] == ["CS2-0004", "ACTIVE", "CRITICAL"]
    assert rows["down"].split()[1:] == ["-"] * 6 + ["no", "-"]
    assert f"down: No connection file at {site.daemons['down'].connection_file}." in done.stdout
    assert done.stdout.rstrip().endswith("3 of 4 systems answered.")


def test_fleet_show_json_has_stable_keys_and_the_error_of_the_system_that_did_not_answer(site):
    done = site.cs("fleet", "show", "--output-format", "json")
    assert done.returncode == 7
    out = json.loads(done.stdout)
    assert (out["answered"], out["total"]) == (3, 4)
    by = {s["name"]: s for s in out["systems"]}
    assert list(by) == ["up", "down", "busy", "sick"]  # the inventory's order
    assert set(by["up"]) == {"name", "tags", "reachable", "rttMs", "serial", "state", "systemHealth",
                             "activeExecmode", "configuredExecmode", "runHolder", "slurmJob", "activeFaults", "error"}
    assert by["up"]["reachable"] and by["up"]["rttMs"] > 0 and by["up"]["error"] is None
    assert by["busy"]["runHolder"]["owner"] == "job-7" and by["busy"]["runHolder"]["fabric"] == "UNPROGRAMMED"
    assert by["sick"]["systemHealth"] == "CRITICAL"
    assert [(f["name"], f["status"]) for f in by["sick"]["activeFaults"]] == [("health-critical", "active")]
    assert by["down"]["reachable"] is False and by["down"]["serial"] is None
    assert by["down"]["error"]["code"] == "UNREACHABLE"


def test_tag_filters_and_every_answer_means_exit_0(site):
    done = site.cs("fleet", "show", "--tag", "prod", "--output-format", "json")
    assert done.returncode == 0, done.stdout
    assert [s["name"] for s in json.loads(done.stdout)["systems"]] == ["busy", "sick"]
    both = site.cs("fleet", "show", "--tag", "lab,ws", "--output-format", "json")
    assert [s["name"] for s in json.loads(both.stdout)["systems"]] == ["up"]
    none = site.cs("fleet", "show", "--tag", "nope")
    assert none.returncode == 6 and "No system tagged nope" in none.stderr


def test_a_frozen_system_is_reported_after_its_deadline_and_the_others_still_answer(site):
    frozen = Daemon(extra_args=["--serial", "CS2-0009"]).start()
    try:
        fleet = Fleet({**site.daemons, "frozen": frozen})
        os.kill(frozen.proc.pid, signal.SIGSTOP)  # up, its socket open, but never answering
        try:
            done = fleet.cs("fleet", "show", "--deadline", "1", "--output-format", "json")
        finally:
            os.kill(frozen.proc.pid, signal.SIGCONT)
        out = json.loads(done.stdout)
        by = {s["name"]: s for s in out["systems"]}
        assert done.returncode == 7 and out["answered"] == 3
        assert "did not answer system.show within 1 s" in by["frozen"]["error"]["message"]
        assert by["up"]["state"] == "ACTIVE"
    finally:
        frozen.cleanup()


def test_a_killed_system_is_reported_at_once_not_after_its_deadline(site):
    # kill -9 leaves the connection file and the socket file behind: only the refused connection
    # says nobody listens there (the fleet learns it from ZeroMQ's monitor, without a probe).
    killed = Daemon(extra_args=["--serial", "CS2-0008"]).start()
    try:
        killed.proc.kill()
        killed.proc.wait()
        assert os.path.exists(killed.connection_file)
        fleet = Fleet({"up": site.daemons["up"], "killed": killed})
        started = time.monotonic()
        done = fleet.cs("fleet", "show", "--deadline", "30", "--output-format", "json")
        took = time.monotonic() - started
        out = json.loads(done.stdout)
        by = {s["name"]: s for s in out["systems"]}
        assert done.returncode == 7 and out["answered"] == 1, done.stdout + done.stderr
        assert by["killed"]["error"]["code"] == "UNREACHABLE"
        assert by["killed"]["error"]["message"].startswith("csd is not listening at ipc://"), by["killed"]["error"]
        assert "systemctl status csd" in by["killed"]["error"]["hint"]
        assert by["up"]["state"] == "ACTIVE"
        assert took < 15, f"{took:.1f} s: the refused connection waited for the 30 s deadline"
    finally:
        killed.cleanup()


def test_systems_lists_the_inventory_and_marks_the_one_in_use(site):
    done = site.cs("--system", "busy", "inventory")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Inventory {site.inventory}:"
    assert any(line.startswith("* busy ") for line in lines) and any(line.startswith("  up ") for line in lines)
    out = json.loads(site.cs("inventory", "--output-format", "json").stdout)
    assert [s["name"] for s in out["systems"]] == ["up", "down", "busy", "sick"] and out["current"] is None
    assert out["systems"][0]["tags"] == ["lab", "ws"]


def test_system_and_cs_system_point_any_command_at_one_system(site):
    shown = site.cs("--system", "sick", "system", "show", "--output-format", "json")
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["serial"] == "CS2-0004"
    by_env = site.cs("system", "show", "--output-format", "json", CS_SYSTEM="busy")
    assert json.loads(by_env.stdout)["serial"] == "CS2-0003"
    # The flag beats the environment; an explicit connection file beats $CS_SYSTEM.
    assert json.loads(site.cs("--system", "up", "system", "show", "--output-format", "json",
                              CS_SYSTEM="busy").stdout)["serial"] == "CS2-0001"
    up = site.daemons["up"]
    explicit = site.cs("--connect", up.connection_file, "--key", up.admin_key, "system", "show",
                       "--output-format", "json", CS_SYSTEM="busy")
    assert json.loads(explicit.stdout)["serial"] == "CS2-0001"
    # Each system is reached with its own key from the inventory, whatever $CS_KEY says.
    assert site.cs("--system", "up", "whoami", CS_KEY=site.daemons["busy"].admin_key).returncode == 0


def test_an_unknown_system_suggests_the_closest_name(site):
    done = site.cs("--system", "sik", "system", "show")
    assert done.returncode == 6
    assert "No system `sik` in the inventory" in done.stderr and "Did you mean `sick`?" in done.stderr
    both = site.cs("--system", "up", "--connect", "/nowhere/csd.json", "system", "show")
    assert both.returncode == 2 and "--system names the system to use" in both.stderr


def test_the_stopped_system_says_why_and_what_to_do(site):
    done = site.cs("--system", "down", "system", "show")
    assert done.returncode == 7 and "No connection file at" in done.stderr and "Is csd running?" in done.stderr


def test_use_is_for_the_shell_and_one_shot_says_so(site):
    done = site.cs("use", "up")
    assert done.returncode == 2 and "cs --system NAME COMMAND" in done.stderr


def test_no_inventory_says_where_it_was_looked_for(tmp_path):
    fleet = Fleet({})
    try:
        missing = str(tmp_path / "none.toml")
        done = fleet.cs("fleet", "show", CS_INVENTORY=missing)
        assert done.returncode == 6 and f"none of {missing} exists" in done.stderr
        with open(fleet.inventory, "w") as f:
            f.write('[systems.a]\nendpoint = "tcp://127.0.0.1:1"\n')
        bad = fleet.cs("inventory")
        assert bad.returncode == 2 and "endpoint needs server_key" in bad.stderr
    finally:
        fleet.cleanup()


def test_the_one_shot_path_without_a_system_loads_neither_the_inventory_nor_the_fleet():
    """Every one-shot `cs` loads the command table; the fleet's modules (threads, queues, TOML)
    load only when a system is named or a fleet command runs."""
    import subprocess
    import sys

    from tests.harness import ROOT

    code = ("import sys, csadmin.main; print(sorted(m for m in sys.modules if m.startswith(('csadmin.fleet', "
            "'csadmin.clientlib.inventory', 'tomllib'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    assert out.strip() == "[]"


def test_a_system_whose_key_it_refuses_is_reported_and_the_others_answer(site):
    stranger = Daemon()  # a key no csd of the site knows: the handshake is refused at once
    try:
        fleet = Fleet({"up": site.daemons["up"], "sick": site.daemons["sick"]})
        with open(fleet.inventory) as f:
            text = f.read()
        with open(fleet.inventory, "w") as f:
            f.write(text.replace(site.daemons["sick"].admin_key, stranger.admin_key))
        done = fleet.cs("fleet", "show", "--output-format", "json")
        by = {s["name"]: s for s in json.loads(done.stdout)["systems"]}
        assert done.returncode == 7 and by["up"]["reachable"]
        assert by["sick"]["error"]["code"] == "PERMISSION_DENIED"
        assert "refused this client's key" in by["sick"]["error"]["message"]
    finally:
        stranger.cleanup()


@pytest.mark.parametrize("args, message", [
    (("fleet", "show", "--deadline", "0"), "--deadline needs a number of seconds above 0"),
    (("fleet", "show", "--deadline", "soon"), "--deadline needs a number of seconds above 0"),
    (("fleet", "show", "--systems", "up,,sick"), "has an empty name"),
    (("fleet", "show", "--systems", "x" * 5000), "No system `xxxxxxxx"),
    (("fleet", "execmode", "setup", "--mode", "pipelined", "--systems", "up", "--max-parallel", "0", "--no-confirm"),
     "--max-parallel must be at least 1"),
    (("fleet", "execmode", "setup", "--systems", "up", "--no-confirm"), "needs --mode"),
])
def test_bad_input_is_refused_with_what_to_do(site, args, message):
    done = site.cs(*args)
    assert done.returncode in (2, 6), done.stderr
    assert message in done.stderr and len(done.stderr) < 2000, done.stderr
