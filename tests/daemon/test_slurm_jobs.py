"""slurm.job.begin / slurm.job.end against a real csd: admins only, checked arguments, durable
across a restart, runs carry the job in every view, and the epilog's end aborts the job's run."""

from __future__ import annotations

import pytest

from csadmin import errors


@pytest.fixture
def csd(make_csd):
    daemon = make_csd()
    daemon.runtime_key = daemon.add_key("runtime", "operator")
    return daemon.start()


def test_only_admins_tell_csd_which_job_holds_the_wafer(csd):
    with csd.client(key=csd.runtime_key) as runtime:
        for op, args in (("slurm.job.begin", {"job_id": "7", "user": "alice"}), ("slurm.job.end", {"job_id": "7"})):
            with pytest.raises(errors.PermissionDenied) as refused:
                runtime.call(op, **args)
            assert "needs the admin role" in refused.value.message


@pytest.mark.parametrize("args, wrong", [
    ({"job_id": "7; rm -rf /", "user": "alice"}, "job_id"),
    ({"job_id": "", "user": "alice"}, "job_id"),
    ({"job_id": "7", "user": ""}, "user"),
    ({"job_id": 7, "user": "alice"}, "job_id"),
    ({"job_id": "7"}, "user"),
])
def test_bad_arguments_are_refused_with_a_reason(csd, args, wrong):
    with csd.client() as c:
        with pytest.raises(errors.InvalidArgument) as refused:
            c.call("slurm.job.begin", **args)
        assert wrong in refused.value.message
        assert c.system_show()["slurmJob"] is None


def test_runs_carry_the_job_everywhere_and_its_end_aborts_the_run_it_left(csd):
    with csd.client() as admin, csd.client(key=csd.runtime_key) as runtime:
        began = admin.call("slurm.job.begin", job_id="42", user="alice")
        assert began["changed"] and began["slurmJob"]["jobId"] == "42"
        run = runtime.open_run(mode="train", owner="trainer")
        assert run.record["slurmJob"] == "42"
        assert admin.system_show()["runHolder"]["slurmJob"] == "42"
        assert admin.runs_list()["runs"][0]["slurmJob"] == "42"
        listing = csd.cs("runs", "list")
        assert "SLURM JOB" in listing.stdout and " 42 " in listing.stdout
        shown = {k.strip(): v.strip() for k, _, v in
                 (line.partition(" : ") for line in csd.cs("runs", "show", run.id).stdout.splitlines())}
        assert shown["Slurm job"] == "42"
        shown = csd.cs("system", "show").stdout
        assert "Slurm job" in shown and "42 (alice)" in shown and "slurm job 42" in shown
        ended = admin.call("slurm.job.end", job_id="42")
        assert (ended["changed"], ended["abortedRun"]) == (True, run.id)
        with pytest.raises(errors.RunAborted) as aborted:
            run.stream(10)
        assert "slurm job 42 ended" in aborted.value.message
        assert admin.call("slurm.job.end", job_id="42")["changed"] is False  # a retried epilog
        audited = [(e["op"], e["outcome"]) for e in admin.audit_show()]
        assert ("slurm.job.begin", "ok") in audited and ("slurm.job.end", "ok") in audited


def test_the_job_holding_the_wafer_survives_a_restart(csd):
    with csd.client() as c:
        c.call("slurm.job.begin", job_id="42", user="alice")
    csd.restart()
    with csd.client() as c:
        job = c.system_show()["slurmJob"]
        assert (job["jobId"], job["user"]) == ("42", "alice")
        assert c.open_run(mode="train", heartbeat=False).record["slurmJob"] == "42"
