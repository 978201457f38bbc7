"""Slurm across three nodes, each with its own CS-2 (its own csd), on this one host: Debian's
slurmd runs once per node (`slurmd -N NAME`, a port each), and each node's scripts reach its own
csd through cs-slurm.NODE.env (docs/slurm.md, "Several nodes"). Checked, in order, on one
cluster: a weight-streaming job goes to the node already in that mode; with that node busy,
Slurm switches one other idle node (and only one) rather than waiting; wafer jobs never share a
node; `cs fleet show` agrees with sinfo and squeue; a critical fault drains only its node (its
job's run aborted) while the others keep running.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.csadmin.fleet import Fleet
from tests.harness import ROOT, Daemon, wait_until
from tests.slurm.cluster import Cluster, needs_slurm, site_of

HEALTH_INTERVAL = 5
NODES = ("cs1", "cs2", "cs3")

pytestmark = needs_slurm()


class Site:
    def __init__(self, csds: dict[str, Daemon], cluster: Cluster, trainers: dict[str, str]):
        self.csds, self.cluster = csds, cluster
        self.fleet = Fleet(csds)
        self.nodes_env = json.dumps({n: [d.connection_file, trainers[n]] for n, d in csds.items()})
        self.background: list[subprocess.Popen] = []

    @property
    def out(self) -> str:
        return self.cluster.path("out")

    def env(self) -> dict:
        return self.cluster.env(CS_TEST_NODES=self.nodes_env, PYTHONPATH=ROOT)

    def runtime(self, how: str) -> list[str]:
        return [sys.executable, f"{ROOT}/tests/slurm/runtime.py", how, self.out]

    def sbatch(self, *options: str, hold: bool = True) -> str:
        script = "exec " + " ".join(self.runtime("hold" if hold else "quick"))
        return self.cluster.sbatch("--gres=cs:1", *options, script=script, env=self.env())

    def srun(self, *options: str, hold: bool = False) -> subprocess.CompletedProcess | str:
        """An interactive wafer job (srun asks for its node itself: no 30-second pass after a
        switch). Quick: returns when it ended. Hold: left running; returns its job id."""
        name = f"fleet-{time.monotonic_ns()}"
        cmd = ["srun", "--gres=cs:1", f"--job-name={name}", *options, *self.runtime("hold" if hold else "quick")]
        if not hold:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=self.env(), cwd=self.out,
                                  stdin=subprocess.DEVNULL)
        self.background.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                stdin=subprocess.DEVNULL, env=self.env(), cwd=self.out))
        return wait_until(lambda: self.cluster._run("squeue", "-h", "-n", name, "-o", "%i").stdout.strip(), 30,
                          interval=0.2, what=f"srun job {name} queued")

    def saw(self, job_id: str, timeout: float = 120) -> dict:
        return self.cluster.runtime_saw(job_id, timeout)

    def show(self, node: str) -> dict:
        with self.csds[node].client() as c:
            return c.system_show()

    def switches(self, node: str) -> int:
        """How many times this node's CS-2 went to standby (each mode switch starts with one)."""
        with self.csds[node].client() as c:
            return len(c.events_show(event_type="EventStandbyIssued"))

    def sinfo(self) -> dict[str, tuple[str, frozenset]]:
        lines = self.cluster._run("sinfo", "-h", "-N", "-o", "%N %T %b").stdout.split("\n")
        return {n: (state, frozenset(features.split(","))) for n, state, features in
                (line.split() for line in lines if line.strip())}

    def squeue(self) -> dict[str, str]:
        """node -> the running job on it."""
        lines = self.cluster._run("squeue", "-h", "-t", "RUNNING", "-o", "%i %N").stdout.split("\n")
        return {node: job for job, node in (line.split() for line in lines if line.strip())}


@pytest.fixture(scope="module")
def site():
    csds, trainers, cluster = site_of(NODES, HEALTH_INTERVAL)
    s = Site(csds, cluster, trainers)
    try:
        cluster.start()
        yield s
    finally:
        for p in s.background:
            p.kill()
            p.wait(10)
        cluster.cleanup()
        s.fleet.cleanup()  # stops and removes the csds


def test_three_nodes_place_switch_isolate_and_agree_with_fleet_show(site):
    cluster = site.cluster
    # 1. The first weight-streaming job makes Slurm switch one node (any: all are PIPELINED).
    first = site.srun("--constraint=cs2_weight_streaming")
    assert first.returncode == 0, first.stderr + cluster.logs()
    ws_node = json.loads(first.stdout.splitlines()[-1])["node"]
    assert {n: site.show(n)["activeExecmode"] for n in NODES} == {
        n: "WEIGHT_STREAMING" if n == ws_node else "PIPELINED" for n in NODES}
    switched = {n: site.switches(n) for n in NODES}
    assert switched == {n: 1 if n == ws_node else 0 for n in NODES}

    # 2. The next one goes to that node, already in the mode: no switch anywhere. Once the node is
    # idle again: while slurmctld still has it COMPLETING the first job, it is not available, and
    # Slurm rightly switches an idle node instead (seen on a loaded machine).
    wait_until(lambda: (lambda state, features: state == "idle" and "cs2_weight_streaming" in features)(
        *site.sinfo()[ws_node]), 60,
               interval=0.2, what=f"{ws_node} idle in weight streaming")
    held_ws = site.sbatch("--constraint=cs2_weight_streaming")
    saw = site.saw(held_ws)
    assert (saw["node"], saw["execmode"], saw["slurmJob"]) == (ws_node, "WEIGHT_STREAMING", held_ws)
    assert {n: site.switches(n) for n in NODES} == switched

    # 3. That node busy: Slurm switches one other idle node rather than wait — and only one.
    second_ws = site.srun("--constraint=cs2_weight_streaming", hold=True)
    saw2 = site.saw(second_ws)
    other = saw2["node"]
    assert other != ws_node and saw2["execmode"] == "WEIGHT_STREAMING"
    third = next(n for n in NODES if n not in (ws_node, other))
    assert site.switches(other) == 1 and site.switches(third) == 0
    assert site.show(third)["activeExecmode"] == "PIPELINED"

    # 4. Wafer jobs never share a node: the third takes the last free wafer, a fourth waits.
    plain = site.sbatch()
    assert site.saw(plain)["node"] == third
    waiting = site.sbatch()
    cluster.wait_job(waiting, lambda j: j["JobState"] == "PENDING" and j["Reason"] == "Resources",
                     what="pending for the wafer")
    running = site.squeue()
    assert running == {ws_node: held_ws, other: second_ws, third: plain}

    # 5. `cs fleet show` agrees with sinfo (modes) and squeue (who holds each wafer).
    shown = site.fleet.cs("fleet", "show", "--output-format", "json")
    assert shown.returncode == 0, shown.stderr
    by = {s["name"]: s for s in json.loads(shown.stdout)["systems"]}
    sinfo = site.sinfo()
    for n in NODES:
        feature = "cs2_" + by[n]["activeExecmode"].lower()
        assert feature in sinfo[n][1], (n, by[n]["activeExecmode"], sinfo[n])
        assert by[n]["slurmJob"]["jobId"] == running[n] and by[n]["runHolder"]["slurmJob"] == running[n]

    # 6. A critical fault on one CS-2 aborts its job's run and drains only its node.
    with site.csds[other].client() as c:
        c.fault_inject("health-critical")
        assert c.runs_show(saw2["runId"])["status"] == "ABORTED"
    node = cluster.wait_node(lambda n: n.drained, timeout=4 * HEALTH_INTERVAL, what="drained by the health check",
                             name=other)
    assert node.reason == "systemHealth CRITICAL (cs health check)"
    since = len(cluster.hook_lines("health-check"))
    wait_until(lambda: len(cluster.hook_lines("health-check")[since:]) >= 6, 4 * HEALTH_INTERVAL, interval=0.2,
               what="two more rounds of health checks")
    assert not cluster.node(ws_node).drained and not cluster.node(third).drained
    assert {n: cluster.job(j)["JobState"] for n, j in ((ws_node, held_ws), (third, plain))} == {
        ws_node: "RUNNING", third: "RUNNING"}
    shown = json.loads(site.fleet.cs("fleet", "show", "--output-format", "json").stdout)
    health = {s["name"]: s["systemHealth"] for s in shown["systems"]}
    assert health == {n: "CRITICAL" if n == other else "OK" for n in NODES}
    assert "drain" in site.sinfo()[other][0] and all("drain" not in site.sinfo()[n][0] for n in (ws_node, third))

    # The fault cleared, the health check resumes the node.
    with site.csds[other].client() as c:
        c.fault_clear(all=True)
    cluster.wait_node(lambda n: not n.drained, timeout=4 * HEALTH_INTERVAL, what="resumed", name=other)
