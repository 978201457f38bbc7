"""A small training runtime against csd: wait for the system, open a run, program the fabric
once, stream batches, close, and write performance.json.

    cs --embedded        # a private csd; it prints `export CS_CONNECT=… CS_KEY=…`: in another
                         # terminal, run that export, then
    python examples/train_loop.py --performance-dir out

or name csd and your key yourself: `--connect FILE --key FILE` (or `--endpoint URL --key FILE`
for an ipc socket with csd.json beside it); see examples/connection_options.py.

It builds the compiled artifact's descriptor for the system it finds (its serial and active
execution mode); `--target-system` / `--execmode` let you try an incompatible one. Exit codes
follow `cs` (README, "Exit codes"): 4 when another run holds the fabric, 3 when refused, ...
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import connection_options
from csadmin import errors


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    connection_options.add(p)
    p.add_argument("--owner", default="train-loop", help="the run's owner label (e.g. a job name)")
    p.add_argument("--execmode", help="wait until the system runs in this execution mode")
    p.add_argument("--target-system", help="compile for this serial (default: the system's)")
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=256, help="samples per batch")
    p.add_argument("--batch-seconds", type=float, default=0.05, help="host time to prepare one batch")
    p.add_argument("--size-bytes", type=int, default=4_000_000_000, help="the compiled program's size")
    p.add_argument("--est-samples-per-sec", type=float, default=5_000.0)
    p.add_argument("--lease-seconds", type=float, help="the run's lease (default: csd's)")
    p.add_argument("--performance-dir", default=".", help="where performance.json goes")
    p.add_argument("--wait-timeout", type=float, default=300.0, help="seconds to wait for the system")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with connection_options.client(args) as cs:
            print("waiting for the system to be ACTIVE…", flush=True)
            snap = cs.wait_for(state="ACTIVE", execmode=args.execmode, timeout=args.wait_timeout)
            program = {
                "fingerprint": f"sha256:train-loop-{args.size_bytes}",
                "target_system": args.target_system or snap["serial"],
                "execmode": snap["activeExecmode"],
                "mode": "train",
                "compile_time": 61.5,
                "est_samples_per_sec": args.est_samples_per_sec,
                "size_bytes": args.size_bytes,
            }
            with cs.open_run(mode="train", owner=args.owner, lease_seconds=args.lease_seconds) as run:
                print(f"opened {run.id} on {snap['serial']} ({snap['activeExecmode']}); programming…", flush=True)
                run.program(program)
                print("programmed; streaming", flush=True)
                for _ in range(args.batches):
                    time.sleep(args.batch_seconds)  # the host preparing the next batch
                    run.stream(args.batch_size)
                performance = run.close(performance_dir=args.performance_dir)
            print(json.dumps(performance, indent=2, sort_keys=True))
            return 0
    except errors.CsError as exc:
        print(f"train_loop: {exc.code}: {exc.message}" + (f"\n{exc.hint}" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
