"""A training runtime as a Slurm job runs it (tests/slurm): it opens a run, writes what it saw to
OUT/<job id>.json and stdout, then closes the run (`quick`) or holds the fabric until Slurm kills it (`hold`)."""

import json
import os
import signal
import sys

from csadmin.client import Client

how, out = sys.argv[1], sys.argv[2]
job = os.environ["SLURM_JOB_ID"]
with Client(timeout=10) as cs:
    snap = cs.system_show()
    run = cs.open_run(mode="train", owner=f"trainer-{job}", lease_seconds=600)  # only the epilog frees it early
    record = {"runId": run.id, "slurmJob": run.record["slurmJob"], "execmode": snap["activeExecmode"]}
    with open(os.path.join(out, f"{job}.json.tmp"), "w") as f:
        json.dump(record, f)
    os.replace(os.path.join(out, f"{job}.json.tmp"), os.path.join(out, f"{job}.json"))
    print(json.dumps(record), flush=True)
    if how == "hold":
        signal.pause()  # until scancel's SIGTERM, which ends the process without closing the run
    run.close()
