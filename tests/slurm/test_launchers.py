"""The seeds' workflow on the 3-node test cluster (each node its own csd): csrun_cpu validates
and compiles for one system under srun without programming it, csrun_wse runs the training
script on that system's node through Slurm (passing Slurm's own lines through), its input workers
on the two other nodes, and reuses the compile; a weight-streaming layout with one single-task
node is refused before anything is allocated, and the artifacts are refused on another system.
Then the workers on other nodes shard by their index, and one that raises or is killed ends the
run cleanly with its traceback / its Slurm task in the trainer's error."""

from __future__ import annotations

import json
import os
import re
import subprocess
import pytest

from tests.harness import ROOT, wait_until
from tests.launch.helpers import BIN, TRAIN, programming_events, report, runs
from tests.slurm.cluster import needs_slurm, site_of

NODES = ("cs1", "cs2", "cs3")
SHARDED = os.path.join(os.path.dirname(__file__), "sharded_input.py")
pytestmark = needs_slurm()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    csds, trainers, cluster = site_of(NODES, 5)
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
    # 003's layout, scaled to the cluster: two single-task nodes (the training process on cs1's, the
    # other not allocated: this runtime runs nothing there), two worker nodes of two tasks, cyclic.
    proc = subprocess.Popen([os.path.join(BIN, "csrun_wse"), "--total-nodes", "4", "--tasks-per-node", "2",
                             "--single-task-nodes", "2", "--cyclic", "python-ws", *script, "--cs_ip", "cs1",
                             "--mode", "train"],
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
    # The four workers fed it from cs2 and cs3 (task 0 is the trainer), every sample counted once.
    with csds["cs1"].client() as c:
        shown = c.runs_show(record["runId"])
    fed = {w["name"]: w["samples"] for w in shown["workers"]}
    assert set(fed) == {f"worker-{i} (task {i + 1} on {node})" for i, node in enumerate(("cs2", "cs3") * 2)}, fed
    assert sum(fed.values()) == 12 * 32 and shown["inputReport"]["joined"] == 4
    text = csds["cs1"].cs("runs", "show", record["runId"])
    assert "worker-3 (task 4 on cs3)" in text.stdout and "Input workers: 4 of 4 joined" in text.stdout, text.stdout
    assert not [name for name in os.listdir(work) if name.startswith(".csrun_wse-")]  # the rendezvous is gone

    # Another system: Slurm runs the job on cs2's node; the artifacts are refused there.
    done = launch("csrun_wse", "python-ws", *script, "--cs_ip", "cs2", env=env, cwd=work)
    assert done.returncode == 3, done.stderr + cluster.logs()
    assert ("were compiled for system CS2-CS1, not CS2-CS2: when you compile your model on one CS system, "
            "you cannot run this compiled model on another") in done.stderr
    assert runs(csds["cs2"]) == []


def test_workers_on_other_nodes_shard_by_their_index_and_fail_cleanly(site):
    csds, cluster, env, work = site
    layout = ["--total-nodes", "4", "--single-task-nodes", "2", "--tasks-per-node", "2", "--cyclic", "python-ws"]

    def run(model: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
        done = launch("csrun_wse", *layout, SHARDED, "--model-dir", os.path.join(work, model), *extra,
                      "--cs_ip", "cs1", env=env, cwd=work)
        return done, max(runs(csds["cs1"]), key=lambda r: r["number"])  # this run: the newest

    # Each worker's input function shards by worker_info(): worker i yields i, i+4, i+8, … So the
    # 24 steps of 4 see 96 distinct samples, and each worker's are the start of its own shard,
    # without a gap. (While every worker keeps up they take turns and the steps see exactly
    # 0 … 95; a worker that falls behind on a loaded machine lets the next one go first — the
    # pool's rule, csadmin/cstorch/utils/data/_utils/pool.py — so the shares may differ, never the shards.)
    done, record = run("sharded")
    assert done.returncode == 0, done.stderr + cluster.logs()
    with open(os.path.join(work, "sharded", "fed.json")) as f:
        fed = json.load(f)
    ids = fed["ids"]
    assert fed["workers"] == 4 and len(ids) == len(set(ids)) == 96, fed
    shards = {i: sorted(x for x in ids if x % 4 == i) for i in range(4)}
    assert all(got and got == list(range(i, i + 4 * len(got), 4)) for i, got in shards.items()), shards
    assert record["status"] == "CLOSED" and record["totalSamples"] == 96

    # A worker's exception: the trainer says so with the worker's traceback, the run ends ABORTED,
    # csrun_wse returns the script's status (3), and no worker is left behind.
    done, record = run("raised", "--raise-in", "1", "--num-steps", "400")  # it fails long before the end
    assert done.returncode == 3, done.stderr + cluster.logs()
    assert "INPUT_WORKER_FAILED: input worker 1 raised:\nTraceback (most recent call last):" in done.stderr
    assert "RuntimeError: shard 1 is unreadable" in done.stderr
    assert record["status"] == "ABORTED" and "input worker 1 raised RuntimeError" in record["abortReason"], record

    # A worker killed: named by its Slurm task and node.
    done, record = run("killed", "--kill-in", "2", "--num-steps", "400")
    assert done.returncode == 3, done.stderr + cluster.logs()
    assert re.search(r"input worker 2 \(Slurm task 3 on cs\d, pid \d+\) was killed by signal SIGKILL", done.stderr)
    assert record["status"] == "ABORTED" and "input worker 2" in record["abortReason"], record
    # A worker task that ends before it reaches the trainer (its script failed early): the trainer,
    # waiting for its workers, reads it in the task's exit file; no run was opened.
    before = len(runs(csds["cs1"]))
    done, _ = run("early", "--exit-in-task", "2")
    assert done.returncode == 3, done.stderr + cluster.logs()
    assert re.search(r"input worker 1 \(Slurm task 2 on cs\d, pid \d+\) exited with status 5 without finishing",
                     done.stderr), done.stderr
    assert len(runs(csds["cs1"])) == before

    # Every task of the step ended: the job completes (its epilogs run) and leaves the queue.
    wait_until(lambda: not cluster._run("squeue", "-h").stdout.strip(), 60, interval=0.2, what="the queue empty")
