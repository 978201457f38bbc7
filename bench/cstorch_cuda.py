"""One shot on a machine with a CUDA device: the CUDA tests (CUDA_TESTS), then a short timing of
the bench model there — plain float32 eager PyTorch against the cstorch loop in float16 and in cbfloat16.

    python bench/cstorch_cuda.py            # from the repo root; about a minute and a half
    python bench/cstorch_cuda.py --no-tests # the timing only

Needs a Python with torch (CUDA build) and csadmin's own dependencies (pyzmq, h5py, pyyaml,
tensorboard, pytest, …): no virtualenv of the repo's. Each part runs in its own process (a process
holds one cstorch run) under a time limit; everything it measured is printed, the figures last:

    half dtype | eager float32 ms/step | cstorch ms/step | ratio (cstorch steps/s ÷ eager's)
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CUDA_TESTS = ("tests/cstorch/core/test_cuda_device.py", "tests/cstorch/backend/test_gpu_backend.py",
              "tests/cstorch/backend/test_gpu_backend_library.py")
NEEDED = ("torch", "zmq", "h5py", "yaml", "pytest", "structlog", "transitions", "prompt_toolkit", "prometheus_client")


def missing_modules() -> list[str]:
    missing = []
    for name in NEEDED:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
    return missing


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-tests", action="store_true", help="only the timing")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=50)
    args = p.parse_args(argv)
    missing = missing_modules()
    if missing:
        print(f"cannot run: this Python lacks {', '.join(missing)} (csadmin's dependencies: pyproject.toml, "
              f"[project] dependencies and the test and cstorch extras)", file=sys.stderr)
        return 2
    import torch

    if not torch.cuda.is_available():
        print(f"cannot run: torch {torch.__version__} sees no CUDA device (torch.cuda.is_available() is False)",
              file=sys.stderr)
        return 2
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}", flush=True)
    status = 0
    if not args.no_tests:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                               *CUDA_TESTS], cwd=ROOT, timeout=300)
        print(f"== the CUDA tests: exit status {done.returncode} in {time.perf_counter() - start:.0f} s",
              flush=True)
        status = done.returncode
    figures = {}
    for half in ("float16", "cbfloat16"):
        print(f"== bench/cstorch.py --device cuda --half {half}", flush=True)
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "cstorch.py"), "--device", "cuda",
                               "--half", half, "--rounds", str(args.rounds), "--steps", str(args.steps)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True, timeout=120)
        print(done.stdout, end="", flush=True)
        if done.returncode != 0:
            print(f"bench/cstorch.py --half {half} failed: exit status {done.returncode}", flush=True)
            return done.returncode
        figures[half] = json.loads(done.stdout[done.stdout.index("\n{") + 1:])
    print("half dtype | eager float32 ms/step | cstorch ms/step | ratio wall median (min)")
    for half, f in figures.items():
        print(f"{half} | {f['eager_float32_ms_per_step_median']} | {f['cstorch_ms_per_step_median']} | "
              f"{f['cstorch_ratio_wall_median']} ({f['cstorch_ratio_wall_min']})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
