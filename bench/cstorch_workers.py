"""bench/cstorch.py's workers section: aggregate samples/s of a cstorch run fed by 1, 2 and 4 input
worker processes against the same input function in the training process, in one run.

    .venv/bin/python bench/cstorch.py workers [--rounds 3] [--steps 60] [--cost-ms 20]

A private csd in weight streaming. Each configuration is one training process (configure is once
per process), started by this script in turn — in-process, 1, 2, 4 workers, the order rotating
each round — so that machine load hits them alike. The step is small (an MLP on 64 features); the
input function costs real CPU per batch (`--cost-ms` of float32 matrix products on one thread,
calibrated once), so the input is the bottleneck. Each process reports steps 2…N (the first is the
compile) as samples/s by wall clock; the figure per configuration is the median over rounds, and
the ratio to in-process.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = (0, 1, 2, 4)  # 0: the input function in the training process (num_workers_per_csx=1)
BATCH = 64


def _label(workers: int) -> str:
    return "in-process" if workers == 0 else f"{workers} worker{'s' if workers > 1 else ''}"


def calibrate(cost_ms: float) -> int:
    """How many 128×128 matrix products take `cost_ms` on one thread here."""
    import torch

    torch.set_num_threads(1)
    a = torch.randn(128, 128)
    start, n = time.perf_counter(), 200
    for _ in range(n):
        a = torch.tanh(a @ a)
    return max(1, round(n * cost_ms / 1000 / (time.perf_counter() - start)))


def costly_input_fn(products: int, seed: int = 0):
    """Batches of BATCH samples, each batch costing `products` matrix products of CPU."""
    import torch

    import csadmin.cstorch as cstorch

    torch.set_num_threads(1)
    info = cstorch.utils.data.worker_info()
    g = torch.Generator().manual_seed(seed * 100 + info.task_id)

    def batches():
        while True:
            a = torch.randn(128, 128, generator=g)
            for _ in range(products):
                a = torch.tanh(a @ a)
            x = torch.randn(BATCH, 64, generator=g) + a[0, 0]
            yield x, (x[:, 0] > 0).long()

    class Input:
        def __iter__(self):
            return batches()

    return Input()


def child(args) -> int:
    """One training process: configure, compile, --steps steps; print samples/s as JSON."""
    sys.path.insert(0, ROOT)
    import torch

    import csadmin.cstorch as cstorch

    torch.set_num_threads(1)
    cstorch.configure(model_dir=args.model_dir, compile_dir=os.path.join(args.model_dir, "compile"),
                      num_workers_per_csx=max(1, args.child))
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 2))
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.01)

    @cstorch.compile_step
    def step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        return loss

    loader = cstorch.utils.data.DataLoader(costly_input_fn, num_steps=args.steps, products=args.products)
    start = None
    for i, (x, y) in enumerate(loader):
        step(x, y)
        if i == 0:
            start = time.perf_counter()
    elapsed = time.perf_counter() - start
    print(json.dumps({"workers": args.child, "samples_per_sec": (args.steps - 1) * BATCH / elapsed}), flush=True)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--cost-ms", type=float, default=20.0, help="CPU per batch in the input function")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    p.add_argument("--products", type=int, help=argparse.SUPPRESS)
    p.add_argument("--model-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child is not None:
        return child(args)
    sys.path.insert(0, ROOT)
    from tests.cstorch.helpers import weight_streaming
    from tests.harness import Daemon

    products = calibrate(args.cost_ms)
    daemon = Daemon().start()
    results: dict[int, list[float]] = {w: [] for w in CONFIGS}
    try:
        weight_streaming(daemon)
        tmp = tempfile.mkdtemp(prefix="bench-cstorch-workers-")
        for r in range(args.rounds):
            order = CONFIGS[r % len(CONFIGS):] + CONFIGS[:r % len(CONFIGS)]
            for workers in order:
                command = [sys.executable, os.path.abspath(__file__), "--child", str(workers), "--products",
                           str(products), "--steps", str(args.steps), "--model-dir",
                           os.path.join(tmp, f"r{r}-w{workers}")]
                done = subprocess.run(command, env=daemon.env(), capture_output=True, text=True, timeout=600)
                if done.returncode != 0:
                    print(done.stderr, file=sys.stderr)
                    return 1
                rate = json.loads(done.stdout.strip().splitlines()[-1])["samples_per_sec"]
                results[workers].append(rate)
                print(f"round {r + 1}: {_label(workers)}: {rate:,.0f} samples/s", flush=True)
    finally:
        daemon.cleanup()
    base = statistics.median(results[0])
    summary = {_label(w): {"samples_per_sec_median": round(statistics.median(v), 1),
                           "ratio_to_in_process": round(statistics.median(v) / base, 3)} for w, v in results.items()}
    print(json.dumps({"cost_ms_per_batch": args.cost_ms, "batch": BATCH, "steps": args.steps,
                      "cpus": os.cpu_count(), "load_average": os.getloadavg(), "results": summary}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
