"""csadmin.cstorch against plain eager PyTorch: the same model, data and numerics, interleaved.

    .venv/bin/python bench/cstorch.py [--rounds 7] [--steps 40] [--bfloat16]

A private csd (tests.harness.Daemon) in weight streaming. One process, one cstorch run: the
cstorch loop (compile_step over AdamW, a loss and backward, the sample count streamed to csd)
and the eager loop (the same cstorch optimizer stepped eagerly, so both do the same math) take
turns (the order alternating), `--steps` steps each per round, so machine load hits both alike;
each round gives a steps/s ratio, by wall clock and by this process's CPU time (steadier on a
shared machine), and the median ratio is the figure (target ≥ 0.95 for a step of ≥ 5 ms).
Also reported: the capture + compile time (compile_time in performance.json), the whole first
step (capture, compile, run.open, programming, step 1), and csd round trips per step at steady
state (target ≤ 0.1).

    .venv/bin/python bench/cstorch.py workers [--rounds 3] [--steps 60] [--cost-ms 20]

The workers section (bench/cstorch_workers.py): aggregate samples/s with 1, 2 and 4 input
workers against the same CPU-costly input function in the training process, in one run.

Same numerics: the runtime computes every step in float16 (bfloat16 with --bfloat16) with
float32 weights, as the system does (001), so the eager loop runs under the same CPU autocast.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import csadmin.cstorch as cstorch  # noqa: E402
from csadmin.cstorch import state  # noqa: E402
from tests.cstorch.helpers import weight_streaming  # noqa: E402
from tests.harness import Daemon  # noqa: E402


def build(seed: int, width: int):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(512, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                              torch.nn.ReLU(), torch.nn.Linear(width, 10))
    return net, cstorch.optim.AdamW(net.parameters(), lr=1e-3)


def make_step(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def under_autocast(step):
    """The eager baseline with the runtime's numerics: the whole step under CPU autocast."""
    def run(x, y):
        with torch.autocast("cpu", dtype=cstorch.amp.half_dtype()):
            return step(x, y)
    return run


def timed(step, data, steps: int) -> tuple[float, float]:
    """(steps per wall second, steps per CPU second of this process)."""
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(steps):
        step(*data[i % len(data)])
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1, help="torch threads (both loops)")
    p.add_argument("--bfloat16", action="store_true", help="both loops compute in bfloat16 (default float16)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    cstorch.amp.use_bfloat16(args.bfloat16)
    daemon = Daemon().start()
    try:
        weight_streaming(daemon)
        tmp = tempfile.mkdtemp(prefix="bench-cstorch-")
        cstorch.configure(model_dir=os.path.join(tmp, "model"), compile_dir=os.path.join(tmp, "compile"),
                          mgmt_address=daemon.connection_file, key=daemon.admin_key)
        net, optimizer = build(0, args.width)
        compiled = cstorch.compile(net, backend="wse_ws")
        cs_step = cstorch.compile_step(make_step(compiled, optimizer))
        eager_net, eager_optimizer = build(0, args.width)
        eager_step = under_autocast(make_step(eager_net, eager_optimizer))
        g = torch.Generator().manual_seed(1)
        data = [(torch.randn(args.batch_size, 512, generator=g), torch.randint(0, 10, (args.batch_size,), generator=g))
                for _ in range(8)]
        start = time.perf_counter()
        cs_step(*data[0])
        first_step = time.perf_counter() - start
        eager_step(*data[0])
        timed(eager_step, data, 5)  # warm both
        timed(cs_step, data, 5)
        csd = state.current().csd
        rows, trips_before, steps_measured = [], csd.round_trips, 0
        for r in range(args.rounds):
            pair = {}
            for name in (("eager", "cstorch") if r % 2 == 0 else ("cstorch", "eager")):
                pair[name] = timed(eager_step if name == "eager" else cs_step, data, args.steps)
            steps_measured += args.steps
            rows.append(pair)
            (ew, ec), (cw, cc) = pair["eager"], pair["cstorch"]
            print(f"round {r + 1}: eager {ew:.1f} steps/s ({1000 / ew:.2f} ms/step, {1000 / ec:.2f} ms CPU), "
                  f"cstorch {cw:.1f} steps/s ({1000 / cw:.2f} ms/step, {1000 / cc:.2f} ms CPU), "
                  f"ratio {cw / ew:.3f} wall, {cc / ec:.3f} CPU", flush=True)
        trips = (csd.round_trips - trips_before) / steps_measured
        program = state.current().run.program
        state.current().run.finish()
        with open(os.path.join(tmp, "model", "performance", "performance.json")) as f:
            perf = json.load(f)
        wall = [row["cstorch"][0] / row["eager"][0] for row in rows]
        cpu = [row["cstorch"][1] / row["eager"][1] for row in rows]
        print(json.dumps({
            "eager_ms_per_step_median": round(1000 / statistics.median(r["eager"][0] for r in rows), 3),
            "cstorch_ms_per_step_median": round(1000 / statistics.median(r["cstorch"][0] for r in rows), 3),
            "ratio_wall_median": round(statistics.median(wall), 3), "ratio_wall_min": round(min(wall), 3),
            "ratio_cpu_median": round(statistics.median(cpu), 3), "ratio_cpu_min": round(min(cpu), 3),
            "ops_in_program": program.op_count, "compile_time_s": perf["compile_time"],
            "first_step_s": round(first_step, 3), "csd_round_trips_per_step": round(trips, 4),
            "performance_json": perf, "compute": str(cstorch.amp.half_dtype()), "threads": args.threads,
        }, indent=2))
    finally:
        daemon.cleanup()
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["workers"]:
        from cstorch_workers import main as workers_main  # bench/ is on sys.path as the script's directory

        sys.exit(workers_main(sys.argv[2:]))
    sys.exit(main())
