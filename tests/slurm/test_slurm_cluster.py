"""The Slurm integration against real slurmctld and slurmd (Debian's 22.05 packages) and a real
csd: jobs ask for the wafer (`--gres=cs:1`) and its execution mode (`--constraint=cs2_…`), and
the shipped cs-* scripts keep the node honest (docs/slurm.md).

One cluster and one csd serve the whole module (starting them takes seconds); each test starts
from an idle node, a free fabric and the system ACTIVE in PIPELINED, and leaves it so. Every wait
is on a condition (squeue/scontrol output, csd's state and events, the scripts' log lines).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.harness import ROOT, Daemon, wait_until
from tests.slurm.cluster import Cluster, needs_slurm

HEALTH_INTERVAL = 5  # seconds; Slurm's HealthCheckInterval, as low as the scripts should be run

pytestmark = needs_slurm()


class Site:
    """The test's csd, cluster and keys."""

    def __init__(self, csd: Daemon, cluster: Cluster, trainer_key: str):
        self.csd, self.cluster, self.trainer_key = csd, cluster, trainer_key

    def runtime_env(self) -> dict:
        return self.cluster.env(CS_CONNECT=self.csd.connection_file, CS_KEY=self.trainer_key, PYTHONPATH=ROOT)

    def runtime(self, how: str) -> list[str]:
        return [sys.executable, f"{ROOT}/tests/slurm/runtime.py", how, self.out]

    def submit(self, *options: str, hold: bool = False, wafer: bool = True) -> str:
        """A batch job whose runtime opens a run (tests/slurm/runtime.py); `hold` keeps it until killed."""
        if wafer:
            script = "exec " + " ".join(self.runtime("hold" if hold else "quick"))
        else:
            script = "echo a job that does not use the wafer"
        return self.cluster.sbatch(*(("--gres=cs:1",) if wafer else ()), *options, script=script,
                                   env=self.runtime_env())

    def srun(self, *options: str) -> subprocess.CompletedProcess:
        """An interactive job (srun) whose runtime opens a run and closes it; returns when it ends."""
        return subprocess.run(["srun", "--gres=cs:1", *options, *self.runtime("quick")], capture_output=True,
                              text=True, timeout=180, env=self.runtime_env(), cwd=self.out, stdin=subprocess.DEVNULL)

    @property
    def out(self) -> str:
        return self.cluster.path("out")

    def runtime_saw(self, job_id: str, timeout: float = 90) -> dict:
        return self.cluster.runtime_saw(job_id, timeout)

    def system(self) -> dict:
        with self.csd.client() as c:
            return c.system_show()

    def run(self, run_id: str) -> dict:
        with self.csd.client() as c:
            return c.runs_show(run_id)


@pytest.fixture(scope="module")
def site():
    csd = Daemon(activate_seconds=0.3, standby_seconds=0.3)
    slurm_key = csd.add_key("slurm", "admin")  # what cs-slurm.env gives the scripts
    trainer_key = csd.add_key("trainer", "operator")  # the jobs' runtimes
    csd.start()
    cluster = Cluster(csd.connection_file, slurm_key, HEALTH_INTERVAL)
    try:
        cluster.start()
        yield Site(csd, cluster, trainer_key)
    finally:
        cluster.cleanup()
        csd.cleanup()


@pytest.fixture
def s(site):
    """The site, checked to be at the baseline before and after the test."""
    def baseline():
        snap = site.system()
        assert (snap["state"], snap["activeExecmode"], snap["runHolder"]) == ("ACTIVE", "PIPELINED", None)
        site.cluster.wait_node(lambda n: n.state == "IDLE" and not n.flags and n.active_features == {"cs2_pipelined"},
                               what="idle, not drained, cs2_pipelined active")
    baseline()
    yield site
    baseline()


def test_wafer_jobs_serialise_and_a_killed_jobs_run_is_aborted_by_the_epilog(s):
    cluster = s.cluster
    first = s.submit(hold=True)
    held = s.runtime_saw(first)
    assert held["slurmJob"] == first  # the prolog gave the wafer to the job: its run carries the id
    second = s.submit()
    other = s.submit(wafer=False)
    # The wafer is taken: the second wafer job waits for it, while a job without it runs beside.
    cluster.wait_job(second, lambda j: j["JobState"] == "PENDING" and j["Reason"] == "Resources",
                     what="pending for Resources")
    cluster.wait_job(other, lambda j: j["JobState"] == "COMPLETED", what="a job without the wafer completes")
    assert cluster.job(first)["JobState"] == "RUNNING" and cluster.job(second)["JobState"] == "PENDING"
    assert s.system()["slurmJob"]["jobId"] == first
    listing = s.csd.cs("runs", "list")
    assert listing.returncode == 0 and "SLURM JOB" in listing.stdout
    assert any(held["runId"] in line and f" {first} " in line for line in listing.stdout.splitlines()), listing.stdout

    cluster.scancel(first)
    # The runtime died without closing its run (lease 600 s); the epilog aborts it, and the next
    # job gets the fabric at once.
    after = s.runtime_saw(second, timeout=60)
    assert after["slurmJob"] == second
    killed = s.run(held["runId"])
    assert (killed["status"], killed["abortReason"]) == ("ABORTED", f"slurm job {first} ended")
    cluster.wait_job(second, lambda j: j["JobState"] == "COMPLETED", what="completed")
    wait_until(lambda: s.system()["slurmJob"] is None, 30, what="the second job's epilog to end its hold")


def _switch_events(s, since_seq: int) -> list[dict]:
    with s.csd.client() as c:
        return c.call("events.show", after_seq=since_seq)["events"]


def test_a_job_asking_for_weight_streaming_runs_after_csd_switched_and_the_next_switches_back(s):
    cluster = s.cluster
    seq = s.system()["seq"]
    ws = s.submit("--constraint=cs2_weight_streaming")
    saw = s.runtime_saw(ws)
    assert (saw["execmode"], saw["slurmJob"]) == ("WEIGHT_STREAMING", ws)
    cluster.wait_job(ws, lambda j: j["JobState"] == "COMPLETED", what="completed")
    events = _switch_events(s, seq)
    types = [e["type"] for e in events]
    # Standby, setup, activate — by the scripts' key, as an admin's switch would be — and only
    # then the job's run.
    order = ["EventStandbyIssued", "EventStandbyCompleted", "EventSetExecModeWeightStreaming",
             "EventActivateIssued", "EventActivateCompleted", "EventTrainingStarted"]
    assert [t for t in types if t in order] == order, types
    by = {e["type"]: e["details"].get("by", {}).get("name") for e in events}
    assert by["EventStandbyIssued"] == by["EventSetExecModeWeightStreaming"] == by["EventActivateIssued"] == "slurm"
    activated = next(e for e in events if e["type"] == "EventActivateCompleted")
    assert activated["details"]["execmode"] == "WEIGHT_STREAMING"
    with s.csd.client() as c:
        audited = [(e["name"], e["op"], e["outcome"]) for e in c.audit_show(max_count=20)]
    for op in ("system.standby", "config.execmode.setup", "system.activate"):
        assert ("slurm", op, "ok") in audited, audited
    assert cluster.node().active_features == {"cs2_weight_streaming"}

    # Back to PIPELINED, for an interactive job this time. (A batch job starts at slurmctld's next
    # 30-second pass after the node's "reboot"; srun asks for its node itself, within a second.)
    seq = s.system()["seq"]
    done = s.srun("--constraint=cs2_pipelined")
    assert done.returncode == 0, done.stderr + cluster.logs()
    runs = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    types = [e["type"] for e in _switch_events(s, seq)]
    assert "EventSetExecModePipelined" in types and types.index("EventActivateCompleted") < types.index(
        "EventTrainingStarted"), types
    assert len(runs) == 1 and runs[0]["execmode"] == "PIPELINED" and runs[0]["slurmJob"], done.stdout


def _health_checks_after(cluster, count: int, since: int) -> list[str]:
    """Wait until the health check ran `count` more times after line `since` of its log."""
    return wait_until(lambda: (lines := cluster.hook_lines("health-check")[since:]) and len(lines) >= count and lines,
                      HEALTH_INTERVAL * (count + 4), interval=0.2, what=f"{count} more health checks")


def test_the_features_helper_refuses_while_a_run_outside_slurm_holds_the_fabric(s):
    cluster = s.cluster
    with s.csd.client(key=s.trainer_key) as c:
        run = c.open_run(mode="train", owner="by-hand", lease_seconds=600)
        try:
            seq = c.system_show()["seq"]
            done = s.srun("--constraint=cs2_weight_streaming")
            # The helper refuses, so the job never runs in the wrong mode: the prolog finds the system
            # still PIPELINED, drains the node saying why, and the job fails.
            assert done.returncode != 0 and "{" not in done.stdout, done.stdout + done.stderr
            node = cluster.wait_node(lambda n: n.drained, what="drained by the prolog")
            assert node.reason.startswith("cs prolog: job ") and (
                "CS2-0001 is ACTIVE in PIPELINED, not WEIGHT_STREAMING" in node.reason), node.reason
            refusals = [line for line in cluster.hook_lines("set-feature") if "refusing" in line]
            assert refusals and run.id in refusals[-1] and "by-hand" in refusals[-1], refusals
            assert run.show()["status"] == "OPEN"  # Slurm did not take the wafer from the runtime
            types = [e["type"] for e in c.call("events.show", after_seq=seq)["events"]]
            assert "EventStandbyIssued" not in types, types
            # The health check finds the system fine, but this drain is not its own: it leaves it
            # (test_an_admins_own_drain_is_never_resumed watches two checks do so). slurmctld may
            # also set a node whose prolog failed DOWN ("Prolog failure on host …, setting DOWN"),
            # racing the prolog's drain; a DOWN node is Slurm's to return, so it is left as well.
            since = len(cluster.hook_lines("health-check"))
            checks = _health_checks_after(cluster, 1, since)
            assert all(("stays drained" in line or "node is DOWN" in line) and node.reason in line
                       for line in checks), checks
            assert cluster.node().reason == node.reason
        finally:
            run.close()  # whatever failed above, the next test starts with the fabric free
            cluster.scontrol("update", "NodeName=cs2node", "State=RESUME")  # the admin, having read the reason


def test_an_admins_standby_drains_the_node_and_activate_resumes_it(s):
    cluster = s.cluster
    started = time.monotonic()
    assert s.csd.cs("system", "standby", "--no-confirm").returncode == 0
    node = cluster.wait_node(lambda n: n.drained, timeout=4 * HEALTH_INTERVAL, what="drained by the health check")
    drained_after = time.monotonic() - started
    assert node.reason == "CS2-0001 STANDBY (cs health check)"
    # Within two health-check intervals (plus the check's own run time, generously, for a loaded machine).
    assert drained_after <= 2 * HEALTH_INTERVAL + 3, f"drained {drained_after:.1f} s after the standby"
    # A job submitted meanwhile waits; it runs once the system is back.
    job = s.submit()
    cluster.wait_job(job, lambda j: j["JobState"] == "PENDING", what="pending while drained")
    started = time.monotonic()
    assert s.csd.cs("system", "activate", "--no-confirm").returncode == 0
    cluster.wait_node(lambda n: not n.drained, timeout=4 * HEALTH_INTERVAL, what="resumed by the health check")
    assert time.monotonic() - started <= 2 * HEALTH_INTERVAL + 3
    assert s.runtime_saw(job)["slurmJob"] == job
    cluster.wait_job(job, lambda j: j["JobState"] == "COMPLETED", what="completed")


def test_an_admins_own_drain_is_never_resumed(s):
    cluster = s.cluster
    cluster.scontrol("update", "NodeName=cs2node", "State=DRAIN", "Reason=maintenance: pump swap")
    since = len(cluster.hook_lines("health-check"))
    checks = _health_checks_after(cluster, 2, since)
    assert all("stays drained" in line and "maintenance: pump swap" in line for line in checks), checks
    assert cluster.node().reason == "maintenance: pump swap"
    cluster.scontrol("update", "NodeName=cs2node", "State=RESUME")


def test_csd_down_drains_the_node_as_unreachable_and_its_return_resumes_it(s):
    cluster = s.cluster
    s.csd.stop()
    try:
        node = cluster.wait_node(lambda n: n.drained, timeout=4 * HEALTH_INTERVAL, what="drained: csd is down")
        assert node.reason == "csd unreachable (cs health check)"
    finally:
        s.csd.start()
    cluster.wait_node(lambda n: not n.drained, timeout=4 * HEALTH_INTERVAL, what="resumed: csd is back")
