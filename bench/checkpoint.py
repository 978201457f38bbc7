"""cstorch.save/load (HDF5) against torch.save/torch.load (pickle), interleaved.

    .venv/bin/python bench/checkpoint.py [--rounds 7] [--mib 256] [--layers 32]

A model-like state dict (`--layers` float32 matrices, `--mib` MiB in all, plus an Adam-like
optimizer state of the same size) is written and read back by both, in alternating order each
round, in a temporary directory on the same file system. Both writes are durable: cstorch.save
fsyncs and renames by itself; torch.save is followed by an fsync of its file, so the two do the
same work towards a checkpoint that survives a crash. Reads are from the page cache (the file was
just written), so they measure decoding, not the disk. Figures: median seconds and MiB/s, and the
median of the per-round ratios cstorch/torch.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

import csadmin.cstorch as cstorch  # noqa: E402


def state(mib: int, layers: int) -> dict:
    side = int((mib * 2**20 / 4 / 2 / layers) ** 0.5)  # half weights, half optimizer state
    torch.manual_seed(0)
    weights = {f"layer{i}.weight": torch.randn(side, side) for i in range(layers)}
    moments = {i: {"step": torch.tensor(10.0), "exp_avg": torch.randn(side, side) / 2} for i in range(layers)}
    return {"model": weights, "optimizer": {"state": moments, "param_groups": [{"lr": 0.01, "params": list(range(layers))}]},
            "global_step": 10}


def torch_save(value, path):
    torch.save(value, path)
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--layers", type=int, default=32)
    args = parser.parse_args()
    value = state(args.mib, args.layers)
    size = sum(t.numel() * 4 for t in value["model"].values()) * 2 / 2**20
    times = {key: [] for key in ("cstorch save", "torch save", "cstorch load", "torch load")}
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR", ROOT)) as directory:
        h5, pt = os.path.join(directory, "c.mdl"), os.path.join(directory, "c.pt")
        for round_ in range(args.rounds):
            sides = [("cstorch", cstorch.save, cstorch.load, h5), ("torch", torch_save, torch.load, pt)]
            for name, save, load, path in sides if round_ % 2 == 0 else reversed(sides):
                times[f"{name} save"].append(timed(save, value, path))
                times[f"{name} load"].append(timed(load, path))
            print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in times.items()), flush=True)
        on_disk = {"cstorch": os.path.getsize(h5) / 2**20, "torch": os.path.getsize(pt) / 2**20}
    print(f"\n{size:.0f} MiB of tensors in {2 * args.layers} tensors; files: cstorch {on_disk['cstorch']:.1f} MiB, "
          f"torch {on_disk['torch']:.1f} MiB; {args.rounds} rounds, medians:")
    for key, values in times.items():
        median = statistics.median(values)
        print(f"  {key:13} {median:.3f} s  {size / median:7.0f} MiB/s")
    for op in ("save", "load"):
        ratios = [a / b for a, b in zip(times[f"cstorch {op}"], times[f"torch {op}"])]
        print(f"  {op}: cstorch/torch time ratio, median of rounds {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
