"""A training runtime as a Slurm job runs it (tests/slurm): it opens a run, writes what it saw to
OUT/<job id>.json and stdout, then closes the run (`quick`) or holds the fabric until Slurm kills it (`hold`).

On a test cluster of several nodes on one host (tests/slurm/test_slurm_fleet.py), each node's csd
is elsewhere: `CS_TEST_NODES` maps node name -> [connection file, key file], and the runtime
takes its node's (a real site's runtime finds its node's csd at the default place)."""

import json
import os
import signal
import sys

how, out = sys.argv[1], sys.argv[2]
job = os.environ["SLURM_JOB_ID"]
node = os.environ.get("SLURMD_NODENAME", "")
nodes = json.loads(os.environ.get("CS_TEST_NODES", "{}"))
if node in nodes:
    os.environ["CS_CONNECT"], os.environ["CS_KEY"] = nodes[node]

from csadmin.client import Client  # noqa: E402 (after the environment names this node's csd)

with Client(timeout=10) as cs:
    snap = cs.system_show()
    run = cs.open_run(mode="train", owner=f"trainer-{job}", lease_seconds=600)  # only the epilog frees it early
    record = {"runId": run.id, "slurmJob": run.record["slurmJob"], "execmode": snap["activeExecmode"], "node": node}
    with open(os.path.join(out, f"{job}.json.tmp"), "w") as f:
        json.dump(record, f)
    os.replace(os.path.join(out, f"{job}.json.tmp"), os.path.join(out, f"{job}.json"))
    print(json.dumps(record), flush=True)
    if how == "hold":
        signal.pause()  # until scancel's SIGTERM, which ends the process without closing the run
    run.close()
