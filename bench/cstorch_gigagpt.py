"""gigaGPT (Cerebras's public script) at a tiny size: cstorch's replay, cstorch's fused program and
plain float32 eager PyTorch, interleaved in one process, CSX against a private csd (issue 38).

    .venv/bin/python bench/cstorch.py gigagpt [--rounds 7] [--steps 20] [--compile-dir DIR]
    (the same DIR again: the cached compile)

The model is gigaGPT's model.py, vendored unmodified in bench/gigagpt/ (its README: source, commit,
Apache-2.0). The step is train.py's, in the 2.x shape: `cstorch.backend("CSX", cluster_config=…)`,
the half dtype train.py sets off the CPU (bfloat16), the model built under `backend.device` and
`cstorch.compile`d, cstorch's AdamW over train.py's two param groups (weight decay on ≥2-d
parameters only, betas (0.9, 0.95), eps and weight decay from configuration.py's defaults,
correct_bias), train.py's SequentialLR of LinearLR warm-up then CosineDecayLR, and its
`@cstorch.trace` training_step: loss = compiled_model(input_ids, labels), backward,
clip_grad_norm_(1.0), optimizer.step(), lr_scheduler.step(), zero_grad(); batches come through a
cstorch DataLoader and a DataExecutor. Left out, in every loop: train.py's per-step loss logging
and checkpoints (not the step), its memmap dataset (random tokens instead: the same shapes and
dtypes, int32) and data.py's worker processes.

Three loops take turns (the order alternating each round), `--steps` steps each:
  replay  — the whole runtime, the program run op by op (what CSTORCH_FUSE=0 runs: the same run with
            its compiled program set aside, `program.fused = None`, so Program.execute replays);
  fused   — the whole runtime running the program Inductor compiled (CSTORCH_FUSE=1, core/fused.py);
  eager   — the baseline the user would otherwise run: the same model.py in float32, eager, no
            autocast, torch.optim.AdamW with the same groups and hyper-parameters, the same
            schedule (LambdaLR), clip_grad_norm_, batches from a torch DataLoader of the same data.
One torch thread. Both cstorch loops advance the same run's state (their values are the same bit
for bit: tests/cstorch/core/test_fused.py). Reported: each loop's ms/step, the ratios to eager
(wall and this process's CPU time: median and min over rounds), compile_time (performance.json)
and the Inductor part of it (compile.log), the load average before and after.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench", "gigagpt"))

import torch  # noqa: E402

import csadmin.cstorch as cstorch  # noqa: E402
from csadmin.cstorch.backend import process_backend  # noqa: E402
from model import GPTConfig, GPTModel  # noqa: E402  (bench/gigagpt/model.py, unmodified)
from tests.cstorch.helpers import weight_streaming  # noqa: E402
from tests.harness import Daemon  # noqa: E402

# configuration.py's RunConfig defaults (train.py reads them): weight decay, clip norm, eps.
WEIGHT_DECAY, MAX_GRADIENT_NORM, ADAM_EPSILON = 0.1, 1.0, 1e-8
LEARNING_RATE, WARMUP_STEPS, DECAY_STEPS = 6e-4, 100, 10_000


def param_groups(model):
    """train.py's two groups: weight decay on the ≥2-d parameters only."""
    return [{"params": [p for p in model.parameters() if p.dim() >= 2], "weight_decay": WEIGHT_DECAY},
            {"params": [p for p in model.parameters() if p.dim() < 2], "weight_decay": 0.0}]


def cstorch_step(model, compiled_model):
    """train.py's optimizer, schedule and @cstorch.trace training_step (its all_params is a
    generator the one trace consumes; a list here, the same parameters)."""
    optimizer = cstorch.optim.AdamW(param_groups(model), lr=0.1, weight_decay=WEIGHT_DECAY, correct_bias=True,
                                    betas=(0.9, 0.95), eps=ADAM_EPSILON)
    lr_scheduler = cstorch.optim.lr_scheduler.SequentialLR(optimizer, schedulers=[
        cstorch.optim.lr_scheduler.LinearLR(optimizer, initial_learning_rate=0.0, end_learning_rate=LEARNING_RATE,
                                            total_iters=WARMUP_STEPS),
        cstorch.optim.lr_scheduler.CosineDecayLR(optimizer, initial_learning_rate=LEARNING_RATE,
                                                 end_learning_rate=0.1 * LEARNING_RATE, total_iters=DECAY_STEPS),
    ], milestones=[WARMUP_STEPS])
    all_params = [p for group in optimizer.param_groups for p in group["params"]]

    @cstorch.trace
    def training_step(batch):
        input_ids, labels = batch
        loss = compiled_model(input_ids, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(all_params), MAX_GRADIENT_NORM)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        return loss
    return training_step


def schedule(step: int) -> float:
    """The same learning rate as the cstorch schedule, as a LambdaLR factor of LEARNING_RATE."""
    if step < WARMUP_STEPS:
        return step / WARMUP_STEPS
    t = min(step - WARMUP_STEPS, DECAY_STEPS) / DECAY_STEPS
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t))


def eager_step(model):
    """The same step in plain float32 eager PyTorch: torch.optim.AdamW, the same groups."""
    params = list(model.parameters())
    optimizer = torch.optim.AdamW(param_groups(model), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY,
                                  betas=(0.9, 0.95), eps=ADAM_EPSILON)
    lr_scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)

    def training_step(batch):
        input_ids, labels = batch
        loss = model(input_ids, labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, MAX_GRADIENT_NORM)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        return loss
    return training_step


def tokens(args, n_batches: int = 8):
    """Random token sequences shaped as data.py's (input_ids, labels: the next tokens), int32."""
    g = torch.Generator().manual_seed(1)
    seq = torch.randint(0, args.vocab, (n_batches * args.batch_size, args.seq + 1), generator=g, dtype=torch.int32)
    return torch.utils.data.TensorDataset(seq[:, :-1].contiguous(), seq[:, 1:].contiguous())


def cycled(loader):
    while True:
        yield from loader


def timed(step, batches, steps: int) -> tuple[float, float]:
    """(steps per wall second, steps per CPU second of this process)."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step(next(batches))
    return steps / (time.perf_counter() - start), steps / (time.process_time() - cpu)


def arguments(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warm", type=int, default=5, help="untimed steps of each loop before the rounds")
    p.add_argument("--depth", type=int, default=2)
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=512)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--half", default="bfloat16", help="train.py sets bfloat16 off the CPU backend")
    p.add_argument("--compile-dir", default=None, help="the run's compile_dir (again: a cached compile)")
    return p.parse_args(argv)


def main(argv: list[str]) -> int:
    args = arguments(argv)
    os.environ["CSTORCH_FUSE"] = "1"
    torch.set_num_threads(1)
    load_before = os.getloadavg()
    config = GPTConfig(max_position_embeddings=args.seq, vocab_size=args.vocab, depth=args.depth, heads=args.heads,
                       width=args.width)
    daemon = Daemon().start()
    try:
        weight_streaming(daemon)
        tmp = tempfile.mkdtemp(prefix="bench-gigagpt-")
        compile_dir = args.compile_dir or os.path.join(tmp, "compile")
        cluster = cstorch.distributed.ClusterConfig(mgmt_address=daemon.connection_file,
                                                    credentials_path=daemon.admin_key)
        backend = cstorch.backend("CSX", artifact_dir=os.path.join(tmp, "out"), compile_dir=compile_dir,
                                  cluster_config=cluster)
        cstorch.amp.set_half_dtype(args.half)
        torch.manual_seed(0)
        with backend.device:
            model = GPTModel(config)
        compiled_model = cstorch.compile(model, backend)
        training_step = cstorch_step(model, compiled_model)
        torch.manual_seed(0)
        plain = GPTModel(config)
        data = tokens(args)
        total = 1 + 2 * (args.warm + args.rounds * args.steps)
        executor = cstorch.utils.data.DataExecutor(
            cstorch.utils.data.DataLoader(lambda: torch.utils.data.DataLoader(data, batch_size=args.batch_size,
                                                                              drop_last=True)),
            num_steps=total)
        cs_batches = iter(executor)
        start = time.perf_counter()
        training_step(next(cs_batches))
        first_step = time.perf_counter() - start
        program = process_backend.current().run.program
        compiled = program.fused
        same = compiled is not None and bit_equal(program, compiled, data[:args.batch_size])
        fused_log = "".join(open(f).read() for f in glob.glob(os.path.join(compile_dir, "cs_*", "compile.log")))

        def replay(batch):
            program.fused = None
            try:
                return training_step(batch)
            finally:
                program.fused = compiled

        loops = {"replay": (replay, cs_batches), "fused": (training_step, cs_batches),
                 "eager": (eager_step(plain), cycled(torch.utils.data.DataLoader(data, batch_size=args.batch_size,
                                                                                   drop_last=True)))}
        if compiled is None:
            del loops["fused"]
            print("the program was not fused: compile.log says why:\n" + fused_log, flush=True)
        for step, batches in loops.values():
            timed(step, batches, args.warm)
        rows, names = [], list(loops)
        for r in range(args.rounds):
            order = names if r % 2 == 0 else names[::-1]
            row = {name: timed(*loops[name], args.steps) for name in order}
            rows.append(row)
            ew, ec = row["eager"]
            print(f"round {r + 1}: " + ", ".join(f"{n} {1000 / w:.2f} ms/step ({1000 / c:.2f} CPU)"
                                                for n, (w, c) in row.items())
                  + "; " + ", ".join(f"{n}/eager {w / ew:.3f} wall, {c / ec:.3f} CPU"
                                     for n, (w, c) in row.items() if n != "eager"), flush=True)
        for _ in cs_batches:  # the executor's last steps (none when every loop ran): the run ends
            pass
        perf_path = glob.glob(os.path.join(tmp, "out", "**", "performance.json"), recursive=True)
        perf = json.load(open(perf_path[0])) if perf_path else {}
        summary = summarize(args, rows, names, program, compiled, fused_log, perf, first_step)
        summary["fused_equals_replay_bit_for_bit"] = same
        summary |= {"load_average_before": load_before, "load_average_after": os.getloadavg()}
        print(json.dumps(summary, indent=2))
    finally:
        daemon.cleanup()
    return 0


def bit_equal(program, compiled, batch) -> bool:
    """One execution of the fused program and one of the replay, each on its own copy of the
    run's state and the same batch: every output and every state tensor after it equal bit for bit
    (the contract: tests/cstorch/core/test_fused.py; here on gigaGPT's graph)."""
    inputs = [x.contiguous() for x in batch]
    states = [[t.detach().clone() for t in program.state] for _ in range(2)]
    with torch.no_grad():
        fused_outs = compiled(*inputs, *states[0])
        replay_outs = program.forward(None, list(inputs), states[1])

    def same(a, b):
        return not isinstance(a, torch.Tensor) or (a.dtype == b.dtype and a.shape == b.shape and torch.equal(
            a.reshape(-1).view(torch.uint8) if a.is_floating_point() else a, b.reshape(-1).view(torch.uint8)
            if b.is_floating_point() else b))
    return all(same(a, b) for a, b in zip(fused_outs, replay_outs)) and all(
        same(a, b) for a, b in zip(*states))


def summarize(args, rows, names, program, compiled, fused_log, perf, first_step) -> dict:
    summary = {"model": f"gigaGPT depth {args.depth}, width {args.width}, heads {args.heads}, seq {args.seq}, "
                        f"vocab {args.vocab}, batch {args.batch_size}", "half_dtype": args.half,
               "eager_float32_ms_per_step_median": round(1000 / statistics.median(r["eager"][0] for r in rows), 3)}
    for name in names:
        if name == "eager":
            continue
        wall = [r[name][0] / r["eager"][0] for r in rows]
        cpu = [r[name][1] / r["eager"][1] for r in rows]
        summary |= {f"{name}_ms_per_step_median": round(1000 / statistics.median(r[name][0] for r in rows), 3),
                    f"{name}_ratio_wall_median": round(statistics.median(wall), 3),
                    f"{name}_ratio_wall_min": round(min(wall), 3),
                    f"{name}_ratio_cpu_median": round(statistics.median(cpu), 3),
                    f"{name}_ratio_cpu_min": round(min(cpu), 3)}
    inductor = re.search(r"fused by Inductor \(C\+\+\) in ([0-9.]+) s", fused_log)
    why = re.search(r"not fused: (.*)", fused_log)
    summary |= {"fused": compiled is not None, "not_fused_why": why.group(1) if why else None,
                "ops_in_program": program.op_count, "cached_artifacts": program.cached,
                "compile_time_s": perf.get("compile_time"),
                # compile.log is written with new artifacts only: a cached run's Inductor part is in
                # compile_time (its caches hit) but not logged apart
                "inductor_compile_s": float(inductor.group(1)) if inductor and not program.cached else None,
                "first_step_s": round(first_step, 3)}
    return summary


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
