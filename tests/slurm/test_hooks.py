"""The `cs slurm …` hooks one by one, against a real csd, with a stand-in for scontrol (a script
that answers from files and records what it was asked): the waits, time limits and failure
paths a real cluster rarely shows (tests/slurm/test_slurm_cluster.py runs them under Slurm)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from csadmin import errors
from tests.harness import ROOT, Daemon, wait_until
from tests.slurm.fake_scontrol import PLAIN_JOB, FakeSlurm


@pytest.fixture
def slurm(tmp_path):
    return FakeSlurm(tmp_path)


@pytest.fixture
def csd(make_csd):
    daemon = make_csd(activate_seconds=0.2, standby_seconds=0.2)
    daemon.slurm_key = daemon.add_key("slurm", "admin")
    return daemon.start()


def hook(csd, slurm, *args, env=None, wait=True):
    """Run `cs slurm ARGS` as Slurm would: its key, SLURMD_NODENAME, and the fake scontrol."""
    environment = csd.env(csd.slurm_key)
    environment.update(PATH=slurm.path, FAKE_SLURM=slurm.dir, SLURMD_NODENAME="n1",
                       CS_SLURM_LOG=os.path.join(slurm.dir, "hooks.log"), **(env or {}))
    command = [sys.executable, "-m", "csadmin", "slurm", *args]
    if not wait:
        return subprocess.Popen(command, env=environment, cwd=ROOT, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(command, env=environment, cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60)


def standby(csd) -> None:
    assert csd.cs("system", "standby", "--no-confirm").returncode == 0


# -- prolog ---------------------------------------------------------------------------------------


def test_the_prolog_waits_for_an_admins_activation_then_gives_the_wafer_to_the_job(csd, slurm):
    standby(csd)
    prolog = hook(csd, slurm, "prolog", "--job-id", "7", "--user", "alice", "--wait", "60", wait=False)
    wait_until(lambda: slurm.calls(), 30, what="the prolog to ask Slurm about the job")
    assert csd.cs("system", "activate", "--no-confirm").returncode == 0
    out, err = prolog.communicate(timeout=60)
    assert prolog.returncode == 0, err
    assert "job 7 may run: CS2-0001 is ACTIVE in PIPELINED" in err
    with csd.client() as c:
        assert c.system_show()["slurmJob"]["jobId"] == "7" and c.system_show()["slurmJob"]["user"] == "alice"
    assert slurm.updates() == []


def test_the_prolog_gives_up_after_its_wait_drains_the_node_and_says_why(csd, slurm):
    standby(csd)
    started = time.monotonic()
    done = hook(csd, slurm, "prolog", "--job-id", "7", "--wait", "1")
    assert done.returncode == errors.EXIT_STATE
    assert time.monotonic() - started < 20
    reason = "cs prolog: job 7: CS2-0001 is STANDBY, not ACTIVE in any mode after 1 s"
    assert slurm.updates() == [f"update NodeName=n1 State=DRAIN Reason={reason}"]
    assert "job 7 may not run: CS2-0001 is STANDBY" in done.stderr
    with csd.client() as c:
        assert c.system_show()["slurmJob"] is None


def test_the_prolog_refuses_at_once_a_job_whose_mode_is_not_active(csd, slurm):
    started = time.monotonic()
    done = hook(csd, slurm, "prolog", "--job-id", "7", "--constraint", "cs2_weight_streaming", "--wait", "60")
    assert done.returncode == errors.EXIT_STATE and time.monotonic() - started < 20
    (update,) = slurm.updates()
    assert "cs prolog: job 7: CS2-0001 is ACTIVE in PIPELINED, not WEIGHT_STREAMING" in update


def test_the_prolog_waits_for_a_run_outside_slurm_to_free_the_fabric(csd, slurm):
    with csd.client() as c:
        run = c.open_run(mode="train", owner="by-hand", heartbeat=False)
        prolog = hook(csd, slurm, "prolog", "--job-id", "7", "--wait", "60", wait=False)
        audited = lambda: [e for e in c.audit_show() if e["op"] == "slurm.job.begin"]  # noqa: E731
        wait_until(lambda: any(e["outcome"] == "BUSY" for e in audited()), 30, what="the prolog to be told BUSY")
        run.close()
        out, err = prolog.communicate(timeout=60)
        assert prolog.returncode == 0, err
        assert c.system_show()["slurmJob"]["jobId"] == "7"
        tries = len(audited())
        assert 2 <= tries <= 40, f"{tries} slurm.job.begin requests: the prolog must retry, but calmly"


def test_the_prolog_leaves_jobs_that_want_neither_wafer_nor_mode_alone(csd, slurm):
    slurm.job(PLAIN_JOB)
    done = hook(csd, slurm, "prolog", env={"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice"})
    assert done.returncode == 0 and "nothing to do" in done.stderr
    with csd.client() as c:
        assert c.system_show()["slurmJob"] is None


def test_a_job_asking_only_for_a_mode_is_checked_but_not_given_the_wafer(csd, slurm):
    slurm.job(PLAIN_JOB)
    done = hook(csd, slurm, "prolog", env={"SLURM_JOB_ID": "7", "SLURM_JOB_CONSTRAINTS": "cs2_pipelined"})
    assert done.returncode == 0, done.stderr
    with csd.client() as c:
        assert c.system_show()["slurmJob"] is None


def test_the_prolog_with_csd_down_drains_the_node_as_unreachable(csd, slurm):
    csd.stop()
    done = hook(csd, slurm, "prolog", "--job-id", "7", "--wait", "1")
    assert done.returncode == errors.EXIT_UNREACHABLE
    (update,) = slurm.updates()
    assert "Reason=cs prolog: job 7: csd unreachable" in update


def test_the_prolog_and_epilog_need_a_job_id(csd, slurm):
    for name in ("prolog", "epilog"):
        done = hook(csd, slurm, name)
        assert done.returncode == errors.EXIT_USAGE and "SLURM_JOB_ID" in done.stderr


# -- epilog ---------------------------------------------------------------------------------------


def test_the_epilog_aborts_the_run_its_job_left_and_ignores_other_jobs(csd, slurm):
    with csd.client() as c:
        c.call("slurm.job.begin", job_id="7", user="alice")
        run = c.open_run(mode="train", owner="trainer", heartbeat=False)
        other = hook(csd, slurm, "epilog", env={"SLURM_JOB_ID": "8"})
        assert other.returncode == 0 and "nothing to do" in other.stderr and run.show()["status"] == "OPEN"
        done = hook(csd, slurm, "epilog", env={"SLURM_JOB_ID": "7"})
        assert done.returncode == 0, done.stderr
        assert (run.show()["status"], run.show()["abortReason"]) == ("ABORTED", "slurm job 7 ended")
        assert c.system_show()["slurmJob"] is None


def test_the_epilog_with_csd_down_succeeds_and_says_what_was_left_undone(csd, slurm):
    csd.stop()
    done = hook(csd, slurm, "epilog", "--job-id", "7")
    assert done.returncode == 0 and "csd unreachable" in done.stderr


# -- node_features/helpers and RebootProgram ------------------------------------------------------


def test_the_helper_reports_the_active_mode_and_switches_it_like_an_admin(csd, slurm):
    shown = hook(csd, slurm, "features")
    assert (shown.returncode, shown.stdout) == (0, "cs2_pipelined\n")
    switched = hook(csd, slurm, "set-feature", "cs2_weight_streaming")
    assert switched.returncode == 0, switched.stderr
    with csd.client() as c:
        snap = c.system_show()
        assert (snap["state"], snap["configuredExecmode"]) == ("STANDBY", "WEIGHT_STREAMING")
        audited = [(e["name"], e["op"], e["outcome"]) for e in c.audit_show()]
        assert ("slurm", "system.standby", "ok") in audited and ("slurm", "config.execmode.setup", "ok") in audited
    # Not ACTIVE: the mode it boots into is the one Slurm should count on.
    assert hook(csd, slurm, "features").stdout == "cs2_weight_streaming\n"
    rebooted = hook(csd, slurm, "reboot")
    assert rebooted.returncode == 0, rebooted.stderr
    assert "CS2-0001 is ACTIVE in WEIGHT_STREAMING" in rebooted.stderr and "activation only" in rebooted.stderr
    again = hook(csd, slurm, "set-feature", "cs2_weight_streaming")
    assert again.returncode == 0 and "already ACTIVE in WEIGHT_STREAMING" in again.stderr


def test_the_helper_refuses_while_a_run_holds_the_fabric(csd, slurm):
    with csd.client() as c:
        run = c.open_run(mode="train", owner="by-hand", heartbeat=False)
        done = hook(csd, slurm, "set-feature", "cs2_weight_streaming")
        assert done.returncode == errors.EXIT_BUSY
        assert f"run {run.id} (owner by-hand) holds the fabric" in done.stderr
        assert c.system_show()["state"] == "ACTIVE" and run.show()["status"] == "OPEN"


def test_the_helper_refuses_an_unknown_feature(csd, slurm):
    done = hook(csd, slurm, "set-feature", "cs2_turbo")
    assert done.returncode == errors.EXIT_USAGE and "not a CS-2 feature" in done.stderr


def test_the_helper_with_csd_down_prints_no_feature(csd, slurm):
    csd.stop()
    done = hook(csd, slurm, "features")
    assert done.returncode == errors.EXIT_UNREACHABLE and done.stdout == ""


# -- health check ---------------------------------------------------------------------------------


def test_the_health_check_drains_a_standby_system_and_resumes_it(csd, slurm):
    standby(csd)
    assert hook(csd, slurm, "health-check").returncode == 0
    assert slurm.updates() == ["update NodeName=n1 State=DRAIN Reason=CS2-0001 STANDBY (cs health check)"]
    slurm.node("IDLE+DRAIN", "CS2-0001 STANDBY (cs health check) [root@2026-11-23T11:37:15]")
    assert csd.cs("system", "activate", "--no-confirm").returncode == 0
    assert hook(csd, slurm, "health-check").returncode == 0
    assert slurm.updates()[-1] == "update NodeName=n1 State=RESUME"


def test_the_health_check_leaves_a_node_slurm_is_rebooting_for_a_mode_switch(csd, slurm):
    standby(csd)
    slurm.node("MIXED+NOT_RESPONDING+POWERING_UP")
    done = hook(csd, slurm, "health-check")
    assert done.returncode == 0 and "being rebooted by Slurm" in done.stderr and slurm.updates() == []
    with open(os.path.join(slurm.dir, "hooks.log")) as f:
        assert "cs slurm health-check: node n1 is being rebooted" in f.read()  # CS_SLURM_LOG


def test_the_health_check_with_slurm_down_fails_and_says_so(csd, slurm):
    with open(os.path.join(slurm.dir, "node"), "w") as f:
        f.write("")
    os.chmod(os.path.join(slurm.dir, "bin", "scontrol"), 0o755)
    with open(os.path.join(slurm.dir, "bin", "scontrol"), "w") as f:
        f.write("#!/bin/sh\necho 'slurm_load_node error: Unable to contact slurm controller' >&2\nexit 1\n")
    done = hook(csd, slurm, "health-check")
    assert done.returncode == errors.EXIT_UNREACHABLE and "Unable to contact slurm controller" in done.stderr
