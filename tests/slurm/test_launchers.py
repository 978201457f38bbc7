"""The seeds' workflow on the 3-node test cluster (each node its own csd): csrun_cpu validates
and compiles for one system under srun without programming it, csrun_wse runs the training
script on that system's node through Slurm (passing Slurm's own lines through) and reuses the
compile, a weight-streaming layout with one single-task node is refused before anything is
allocated, and the artifacts are refused on another system."""

from __future__ import annotations

import os
import re
import subprocess
import pytest

from tests.harness import ROOT, Daemon, wait_until
from tests.launch.helpers import BIN, TRAIN, programming_events, report, runs
from tests.slurm.cluster import Cluster, needs_slurm

NODES = ("cs1", "cs2", "cs3")
pytestmark = needs_slurm()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    csds = {n: Daemon(activate_seconds=0.3, standby_seconds=0.3, extra_args=["--serial", f"CS2-{n.upper()}"])
            for n in NODES}
    scripts = {n: d.add_key("slurm", "admin") for n, d in csds.items()}
    trainers = {n: d.add_key("trainer", "operator") for n, d in csds.items()}
    for d in csds.values():
        d.start()
    cluster = Cluster(None, None, 5, nodes={n: (csds[n].connection_file, scripts[n]) for n in NODES})
    work = tmp_path_factory.mktemp("work")
    inventory = work / "systems.toml"
    inventory.write_text("".join(f'[systems.{n}]\nconnect = "{csds[n].connection_file}"\nkey = "{trainers[n]}"\n'
                                 for n in NODES))
    try:
        cluster.start()
        env = cluster.env(CS_INVENTORY=str(inventory), PYTHONPATH=ROOT)
        yield csds, cluster, env, str(work)
    finally:
        cluster.cleanup()
        for d in csds.values():
            d.cleanup()


def launch(name: str, *args: str, env: dict, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.join(BIN, name), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=240, stdin=subprocess.DEVNULL)


def test_compile_on_a_cpu_node_then_run_on_the_system_through_slurm(site):
    csds, cluster, env, work = site
    model_dir = os.path.join(work, "model")
    script = [TRAIN, "--model-dir", model_dir, "--num-steps", "12"]
    # The system's node into weight streaming, as Slurm does it for a job that asks for the mode.
    cluster._run("srun", "--gres=cs:1", "--constraint=cs2_weight_streaming", "--nodelist=cs1", "true", env=env)

    for mode in ("validate_only", "compile_only"):
        done = launch("csrun_cpu", "--cs_ip", "cs1", "python", *script, "--mode", mode, env=env, cwd=work)
        assert done.returncode == 0, done.stderr + cluster.logs()
    rep = report(work)
    assert rep["target_system"] == "CS2-CS1" and rep["cached"] == "no"
    assert runs(csds["cs1"]) == [] and programming_events(csds["cs1"]) == 0  # compiled, not programmed

    # Refused before allocation: no job is submitted.
    def job_ids() -> set[str]:
        return set(re.findall(r"JobId=(\d+)", cluster._run("scontrol", "show", "jobs", "-o").stdout))

    jobs_before = job_ids()
    done = launch("csrun_wse", "--total-nodes", "3", "--single-task-nodes", "1", "python-ws", *script,
                  "--cs_ip", "cs1", env=env, cwd=work)
    assert done.returncode == 2
    assert "On Weight streaming execution at least two single task cpu nodes are required" in done.stderr
    assert job_ids() == jobs_before

    # The wafer busy: csrun_wse waits in the queue, says so in Slurm's words, then runs.
    holder = cluster.sbatch("--gres=cs:1", "--nodelist=cs1", "--constraint=cs2_weight_streaming",
                            script="exec sleep 300", env=env)
    cluster.wait_job(holder, lambda j: j["JobState"] == "RUNNING", what="the holder to run")
    proc = subprocess.Popen([os.path.join(BIN, "csrun_wse"), "--total-nodes", "2", "--single-task-nodes", "2",
                             "python-ws", *script, "--cs_ip", "cs1", "--mode", "train"],
                            env=env, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: "csrun_wse" in cluster._run("squeue", "-h", "-o", "%j %T").stdout, 60,
                   what="csrun_wse's job queued")
        cluster.scancel(holder)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err + cluster.logs()
    assert "queued and waiting for resources" in err and "has been allocated resources" in err, err
    assert "compile cached: reusing " + rep["directory"] in err
    (record,) = runs(csds["cs1"])
    assert (record["status"], record["totalSamples"]) == ("CLOSED", 12 * 32)
    assert record["slurmJob"]  # opened inside the job Slurm allocated

    # Another system: Slurm runs the job on cs2's node; the artifacts are refused there.
    done = launch("csrun_wse", "python-ws", *script, "--cs_ip", "cs2", env=env, cwd=work)
    assert done.returncode == 3, done.stderr + cluster.logs()
    assert ("were compiled for system CS2-CS1, not CS2-CS2: when you compile your model on one CS system, "
            "you cannot run this compiled model on another") in done.stderr
    assert runs(csds["cs2"]) == []
