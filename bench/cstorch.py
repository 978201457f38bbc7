"""csadmin.cstorch against plain eager PyTorch — the loop users run — on the same model and data.

    .venv/bin/python bench/cstorch.py [--half float16|bfloat16|cbfloat16] [--rounds 7] [--steps 40]
    .venv/bin/python bench/cstorch.py halves [--rounds 7] [--steps 40]     # float16, then cbfloat16

A private csd (tests.harness.Daemon) in weight streaming. One process, one cstorch run: the
cstorch loop (compile_step over cstorch's AdamW, a loss and backward, the sample count streamed to
csd, every step in the run's half dtype as the system computes: 001, 002) and the baseline users
run — plain float32 eager PyTorch, no autocast, torch.optim.AdamW — take turns (the order
alternating), `--steps` steps each per round, so machine load hits both alike; each round gives a
steps/s ratio (cstorch ÷ eager float32), by wall clock and by this process's CPU time (steadier on
a shared machine), and the median ratio is the figure. Targets (issue 30): ≥ 0.9 in float16, ≥ 0.85
in cbfloat16. `--autocast-baseline` adds a third loop, eager PyTorch with the runtime's numerics
(the whole step under torch.autocast to the half dtype, the same cstorch AdamW): on a CPU without
float16 arithmetic its float16 steps take seconds. Also reported: the capture + compile time
(compile_time in performance.json), the whole first step (capture, compile, run.open,
programming, step 1), and csd round trips per step at steady state (target ≤ 0.1).

`halves` runs the float16 and the cbfloat16 benchmarks one after the other, each in its own
process (a process holds one run), and prints both.

    .venv/bin/python bench/cstorch.py workers [--rounds 3] [--steps 60] [--cost-ms 20]

The workers section (bench/cstorch_workers.py): aggregate samples/s with 1, 2 and 4 input
workers against the same CPU-costly input function in the training process, in one run.

    .venv/bin/python bench/cstorch.py estimate [--compiles 8] [--load 3]

The estimate section (bench/cstorch_estimate.py): est_samples_per_sec of one program compiled
again and again, without and with busy processes beside it, against the wall clock's.

    .venv/bin/python bench/cstorch.py gigagpt [--rounds 7] [--steps 20] [--compile-dir DIR]

The gigaGPT section (bench/cstorch_gigagpt.py): Cerebras's public gigaGPT model and train.py step
at a tiny size, cstorch's replay and fused program against plain float32 eager PyTorch (issue 38).
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
from csadmin.cstorch.backend import process_backend  # noqa: E402
from tests.cstorch.helpers import weight_streaming  # noqa: E402
from tests.harness import Daemon  # noqa: E402


def build(seed: int, width: int, device: str = "cpu"):
    torch.manual_seed(seed)
    net = torch.nn.Sequential(torch.nn.Linear(512, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                              torch.nn.ReLU(), torch.nn.Linear(width, 10)).to(device)
    return net, cstorch.optim.AdamW(net.parameters(), lr=1e-3)


def make_step(model, optimizer):
    def step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        return loss
    return step


def under_autocast(step, device: str = "cpu"):
    """The eager baseline with the runtime's numerics: the whole step under autocast."""
    def run(x, y):
        with torch.autocast(device, dtype=cstorch.amp.get_half_dtype()):
            return step(x, y)
    return run


def timed(step, data, steps: int) -> tuple[float, float]:
    """(steps per wall second, steps per CPU second of this process); a CUDA device's queue is
    drained before and after."""
    sync = torch.cuda.synchronize if data[0][0].is_cuda else (lambda: None)
    sync()
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(steps):
        step(*data[i % len(data)])
    sync()
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1, help="torch threads (every loop)")
    p.add_argument("--half", choices=("float16", "bfloat16", "cbfloat16"), default="float16",
                   help="the run's half dtype (cstorch.amp.set_half_dtype)")
    p.add_argument("--bfloat16", action="store_true", help="the same as --half bfloat16")
    p.add_argument("--autocast-baseline", action="store_true",
                   help="also time eager PyTorch under torch.autocast to the half dtype (the runtime's numerics)")
    p.add_argument("--device", default="cpu", help="where the model and the batches live (cuda: model.cuda())")
    p.add_argument("--fuse", action="store_true",
                   help="compile the step into fused kernels (CSTORCH_FUSE=1, core/fused.py) and add a third loop, "
                        "the replay of the same program on copies of the state")
    p.add_argument("--compile-dir", default=None, help="the run's compile_dir (again: a cached compile)")
    args = p.parse_args(argv)
    os.environ["CSTORCH_FUSE"] = "1" if args.fuse else "0"
    torch.set_num_threads(args.threads)
    cstorch.amp.set_half_dtype("bfloat16" if args.bfloat16 else args.half)
    daemon = Daemon().start()
    try:
        weight_streaming(daemon)
        tmp = tempfile.mkdtemp(prefix="bench-cstorch-")
        cstorch.configure(model_dir=os.path.join(tmp, "model"), compile_dir=args.compile_dir or os.path.join(tmp, "compile"),
                          mgmt_address=daemon.connection_file, key=daemon.admin_key)
        net, optimizer = build(0, args.width, args.device)
        compiled = cstorch.compile(net, backend="wse_ws")
        loops = {"cstorch": cstorch.compile_step(make_step(compiled, optimizer))}
        plain_net, _ = build(0, args.width, args.device)
        loops["eager"] = make_step(plain_net, torch.optim.AdamW(plain_net.parameters(), lr=1e-3))
        if args.autocast_baseline:
            autocast_net, autocast_optimizer = build(0, args.width, args.device)
            loops["autocast"] = under_autocast(make_step(autocast_net, autocast_optimizer), args.device)
        g = torch.Generator().manual_seed(1)
        data = [(torch.randn(args.batch_size, 512, generator=g).to(args.device),
                 torch.randint(0, 10, (args.batch_size,), generator=g).to(args.device)) for _ in range(8)]
        start = time.perf_counter()
        loops["cstorch"](*data[0])
        first_step = time.perf_counter() - start
        program = process_backend.current().run.program
        if args.fuse:
            if program.fused is None:
                raise SystemExit("--fuse: the program was not fused (stderr says why)")
            scratch = [t.detach().clone() for t in program.state]
            loops["replay"] = lambda x, y: program.forward(None, [x, y], scratch)
        for step in loops.values():  # warm every loop
            timed(step, data, 5)
        csd = process_backend.current().csd
        rows, trips_before, steps_measured = [], csd.round_trips, 0
        names = list(loops)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            row = {name: timed(loops[name], data, args.steps) for name in order}
            steps_measured += args.steps
            rows.append(row)
            ew, ec = row["eager"]
            print(f"round {r + 1}: " + ", ".join(
                f"{name} {w:.1f} steps/s ({1000 / w:.2f} ms/step, {1000 / c:.2f} ms CPU)" for name, (w, c) in row.items())
                + "; " + ", ".join(f"{name}/eager {w / ew:.3f} wall, {c / ec:.3f} CPU"
                                   for name, (w, c) in row.items() if name != "eager"), flush=True)
        trips = (csd.round_trips - trips_before) / steps_measured
        process_backend.current().run.finish()
        with open(os.path.join(tmp, "model", "performance", "performance.json")) as f:
            perf = json.load(f)

        def ratios(name: str, k: int) -> list[float]:
            return [row[name][k] / row["eager"][k] for row in rows]

        summary = {"half_dtype": cstorch.amp.get_half_dtype_str(), "threads": args.threads, "device": args.device,
                   "eager_float32_ms_per_step_median": round(1000 / statistics.median(r["eager"][0] for r in rows), 3)}
        for name in names:
            if name == "eager":
                continue
            wall, cpu = ratios(name, 0), ratios(name, 1)
            summary |= {f"{name}_ms_per_step_median": round(1000 / statistics.median(r[name][0] for r in rows), 3),
                        f"{name}_ratio_wall_median": round(statistics.median(wall), 3),
                        f"{name}_ratio_wall_min": round(min(wall), 3),
                        f"{name}_ratio_cpu_median": round(statistics.median(cpu), 3),
                        f"{name}_ratio_cpu_min": round(min(cpu), 3)}
        summary |= {"fused": program.fused is not None, "ops_in_program": program.op_count,
                    "compile_time_s": perf["compile_time"],
                    "first_step_s": round(first_step, 3), "csd_round_trips_per_step": round(trips, 4),
                    "performance_json": perf}
        print(json.dumps(summary, indent=2))
    finally:
        daemon.cleanup()
    return 0


def halves(argv: list[str]) -> int:
    """float16, then cbfloat16: one process each (one run per process), the same arguments."""
    import subprocess

    figures = {}
    for half in ("float16", "cbfloat16"):
        print(f"== --half {half}", flush=True)
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--half", half, *argv],
                              stdout=subprocess.PIPE, text=True, check=True)
        print(done.stdout, end="", flush=True)
        figures[half] = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    print("half dtype | eager float32 ms/step | cstorch ms/step | ratio wall median (min) | ratio CPU median (min)")
    for half, f in figures.items():
        print(f"{half} | {f['eager_float32_ms_per_step_median']} | {f['cstorch_ms_per_step_median']} | "
              f"{f['cstorch_ratio_wall_median']} ({f['cstorch_ratio_wall_min']}) | "
              f"{f['cstorch_ratio_cpu_median']} ({f['cstorch_ratio_cpu_min']})")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["workers"]:
        from cstorch_workers import main as workers_main  # bench/ is on sys.path as the script's directory

        sys.exit(workers_main(sys.argv[2:]))
    if sys.argv[1:2] == ["halves"]:
        sys.exit(halves(sys.argv[2:]))
    if sys.argv[1:2] == ["gigagpt"]:
        from cstorch_gigagpt import main as gigagpt_main

        sys.exit(gigagpt_main(sys.argv[2:]))
    if sys.argv[1:2] == ["estimate"]:
        from cstorch_estimate import main as estimate_main

        sys.exit(estimate_main(sys.argv[2:]))
    sys.exit(main(sys.argv[1:]))
