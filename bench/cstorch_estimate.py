"""bench/cstorch.py's estimate section: how steady est_samples_per_sec is for one program, with
and without other work on the machine.

    .venv/bin/python bench/cstorch.py estimate [--compiles 8] [--load 3] [--half float16]

The bench model's program (bench/cstorch.py's MLP, AdamW, batch 256) is compiled `--compiles`
times in this process (compile_only, each into a compile_dir of its own so nothing is reused),
first as the machine is, then with `--load` busy processes beside it (each multiplying 512×512
float32 matrices on one thread: CPU and memory bandwidth both taken). For every compile it
reports the estimate the runtime wrote (est_samples_per_sec: the fastest of its executions by the
executing thread's CPU time) and, from the same program executed the same way, what the wall
clock would have said (the estimate before issue 30). The figure is each one's spread, max / min,
idle and loaded together.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import weight_streaming
from tests.harness import Daemon

BUSY = ("import torch\ntorch.set_num_threads(1)\na = torch.randn(512, 512)\n"
        "while True:\n    a = torch.tanh(a @ a)\n")


def compile_once(daemon, root: str, n: int, width: int, batch_size: int, build, make_step) -> tuple[float, float]:
    """One compile_only compile of the bench step: (its estimate, the wall clock's on the same program)."""
    process_backend.reset()
    directory = os.path.join(root, str(n))
    cstorch.configure(model_dir=directory, compile_dir=os.path.join(directory, "compile"), compile_only=True,
                      mgmt_address=daemon.connection_file, key=daemon.admin_key)
    net, optimizer = build(0, width)
    compiled = cstorch.compile(net, backend="wse_ws")
    step = cstorch.compile_step(make_step(compiled, optimizer))
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(batch_size, 512, generator=g), torch.randint(0, 10, (batch_size,), generator=g)
    step(x, y)
    program = process_backend.current().run.program
    scratch = [t.detach().clone() for t in program.state]
    best = float("inf")
    for _ in range(3):  # the estimate as it was: the fastest of 3 executions by the wall clock
        start = time.perf_counter()
        program.execute([x, y], scratch)
        best = min(best, time.perf_counter() - start)
    return program.est_samples_per_sec, batch_size / best


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--compiles", type=int, default=8, help="compiles per phase (idle, loaded)")
    p.add_argument("--load", type=int, default=3, help="busy processes in the loaded phase")
    p.add_argument("--half", choices=("float16", "bfloat16", "cbfloat16"), default="float16")
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=256)
    args = p.parse_args(argv)
    from cstorch import build, make_step  # bench/cstorch.py: the same model and step

    torch.set_num_threads(1)
    cstorch.amp.set_half_dtype(args.half)
    daemon = Daemon().start()
    busy = []
    try:
        weight_streaming(daemon)
        root = tempfile.mkdtemp(prefix="bench-cstorch-estimate-")
        phases = {}
        for phase in ("idle", "loaded"):
            if phase == "loaded":
                busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.load)]
                time.sleep(1.0)  # the busy processes are past their imports and multiplying
            rows = []
            for n in range(args.compiles):
                cstorch.amp.set_half_dtype(args.half)
                rows.append(compile_once(daemon, root, f"{phase}-{n}", args.width, args.batch_size, build, make_step))
                print(f"{phase} {n + 1}: estimate {rows[-1][0]:.0f} samples/s (thread CPU time), "
                      f"wall clock {rows[-1][1]:.0f}", flush=True)
            phases[phase] = rows
        summary = {"half_dtype": args.half, "load_processes": args.load, "load_average": os.getloadavg()}
        for k, name in ((0, "thread_cpu_time"), (1, "wall_clock")):
            values = {phase: [row[k] for row in rows] for phase, rows in phases.items()}
            every = values["idle"] + values["loaded"]
            summary[name] = {
                "idle_median": round(statistics.median(values["idle"])),
                "loaded_median": round(statistics.median(values["loaded"])),
                "min": round(min(every)), "max": round(max(every)), "spread_max_over_min": round(max(every) / min(every), 3),
            }
        print(json.dumps(summary, indent=2))
    finally:
        for process in busy:
            process.kill()
            process.wait()
        process_backend.reset()
        daemon.cleanup()
    return 0
