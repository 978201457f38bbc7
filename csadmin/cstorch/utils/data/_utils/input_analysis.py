"""cs_input_analyzer's side in the script's process: measure the input function.

When `$CSTORCH_ANALYZE_OUT` names a directory (cs_input_analyzer sets it), the script's
`cstorch.utils.data.DataLoader(input_fn, …)` does not feed a run: the script stops there
(roles.py) and `python -m csadmin.cstorch` makes this process one measured input worker. It says which worker it is (cstorch.utils.data.worker_info(): the Slurm
task among the analyzer's tasks, or `$CSTORCH_ANALYZE_TASK` of `$CSTORCH_ANALYZE_TASKS` locally),
calls `input_fn(*args, **kwargs)` as a worker would, draws batches (restarting the input when it
runs out) for `$CSTORCH_ANALYZE_SECONDS` seconds (at least MIN_BATCHES batches), writes
`<dir>/task-<i>.json` (samples, seconds, samples/s, its node and CPUs) and ends with status 0.
The time counted is the input function's alone: from its first call to the last batch drawn.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

from csadmin.shared.atomic_write import write_atomically

from ..worker_info import enter_worker
from .batches import repeated, samples_of

OUT_ENV = "CSTORCH_ANALYZE_OUT"
MIN_BATCHES = 3
DEFAULT_SECONDS = 2.0


def requested() -> bool:
    return bool(os.environ.get(OUT_ENV))


def _identity() -> tuple[int, int]:
    env = os.environ
    if "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        return int(env["SLURM_PROCID"]), int(env["SLURM_NTASKS"])
    return int(env.get("CSTORCH_ANALYZE_TASK", "0")), int(env.get("CSTORCH_ANALYZE_TASKS", "1"))


def measure(input_fn, args: tuple, kwargs: dict, backend=None) -> int:
    """Measure `input_fn` as one input worker (see the module docstring); return the exit status."""
    task, count = _identity()
    enter_worker(task, count)
    seconds = float(os.environ.get("CSTORCH_ANALYZE_SECONDS", DEFAULT_SECONDS))
    start = time.perf_counter()
    samples = batches = 0
    for batch in repeated(input_fn(*args, **kwargs)):  # restarted when it runs out, as a worker's
        samples += samples_of(batch)
        batches += 1
        if batches >= MIN_BATCHES and time.perf_counter() - start >= seconds:
            break
    elapsed = time.perf_counter() - start
    cpus = int(os.environ.get("SLURM_CPUS_PER_TASK") or os.environ.get("CSTORCH_ANALYZE_CPUS") or 1)
    result = {"task": task, "tasks": count, "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(),
              "cpus": cpus, "samples": samples, "batches": batches, "seconds": round(elapsed, 6),
              "samples_per_sec": round(samples / elapsed, 3) if elapsed > 0 else 0.0}
    path = os.path.join(os.environ[OUT_ENV], f"task-{task}.json")
    write_atomically(path, json.dumps(result))
    print(f"input analysis: task {task} of {count} on {result['node']}: {result['samples_per_sec']:g} samples/s "
          f"({samples} samples in {elapsed:.2f} s)", file=sys.stderr, flush=True)
    return 0
