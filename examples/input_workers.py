"""Several input workers feed one run, as on the real system; the report names the slow one.

    cs --embedded                 # a private csd (or run csd yourself), then elsewhere:
    python examples/input_workers.py --workers 4 --slow worker-4 --seconds 5

The opener opens a run with N worker slots, programs the fabric, and starts N worker processes
(this script, `worker` mode). Each worker joins the run with the run id and the join token (read
from its stdin: a secret never goes on a command line, where `ps` would show it), streams
batches for `--seconds`, and leaves. `--slow NAME` makes that worker prepare each batch ten
times more slowly, like a starved input node. The opener then closes the run and prints each
worker's samples, samples/s and share, and csd's report naming the workers below their fair
share. Exit codes follow `cs` (README, "Exit codes").

Each worker can reach csd its own way: `--worker-endpoint NAME=ENDPOINT` (e.g. csd's TCP
endpoint, with `--server-key`) and `--worker-key NAME=KEYFILE` (its own operator key); by
default a worker uses the opener's endpoint and key, in its own process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import connection_options
from csadmin import errors
from csadmin.client import Client

SLOWDOWN = 10  # how much longer the slow worker takes to prepare a batch


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    connection_options.add(p)
    # Without a subcommand: the opener. `worker` is how the opener starts each worker process.
    p.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    p.add_argument("--slow", default="worker-4", help="the worker that feeds slowly ('' for none)")
    p.add_argument("--worker-endpoint", action="append", default=[], metavar="NAME=ENDPOINT")
    p.add_argument("--worker-key", action="append", default=[], metavar="NAME=KEYFILE")
    p.add_argument("--lease-seconds", type=float, help="the run's lease (default: csd's)")
    add_feed_options(p)
    sub = p.add_subparsers(dest="role")
    worker = sub.add_parser("worker", help="join a run as one input worker (the token comes on stdin)")
    worker.add_argument("run_id")
    worker.add_argument("--name", required=True, help="the worker's name in the run's breakdown")
    worker.add_argument("--batch-delay", type=float, default=0.01, help="host time to prepare one batch")
    add_feed_options(worker)
    return p


def add_feed_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seconds", type=float, default=5.0, help="how long each worker feeds")
    p.add_argument("--batch-size", type=int, default=32, help="samples per batch")


def client_for(args, endpoint=None, key=None) -> Client:
    return connection_options.client(args, endpoint, key)


def pairs(given: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in given:
        name, sep, value = item.partition("=")
        if not sep:
            raise errors.UsageError(f"{what} {item!r} is not NAME=VALUE.", f"e.g. worker-2=tcp://cs2-mgmt:9000")
        out[name] = value
    return out


# -- one worker ---------------------------------------------------------------------------------


def feed(args) -> int:
    token = sys.stdin.readline().strip()
    with client_for(args) as cs, cs.join_run(args.run_id, token, name=args.name) as run:
        print(f"{run.worker} joined {run.id}", flush=True)
        deadline, fed = time.monotonic() + args.seconds, 0
        while time.monotonic() < deadline:
            time.sleep(args.batch_delay)  # the host preparing the next batch
            run.stream(args.batch_size)
            fed += args.batch_size
        print(f"{run.worker} fed {fed} samples and leaves", flush=True)
    return 0


# -- the opener -----------------------------------------------------------------------------------


def spawn_worker(args, run, name: str, endpoint: str | None, key: str | None) -> subprocess.Popen:
    delay = 0.01 * (SLOWDOWN if name == args.slow else 1)
    command = [sys.executable, os.path.abspath(__file__)]
    for flag, value in (("--endpoint", endpoint or args.endpoint), ("--server-key", args.server_key),
                        ("--key", key or args.key), ("--connect", args.connect)):
        if value:
            command.append(f"{flag}={value}")  # a Z85 key may begin with "-", which argparse takes for a flag
    command += ["worker", run.id, "--name", name, "--seconds", str(args.seconds),
                "--batch-size", str(args.batch_size), "--batch-delay", str(delay)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, text=True)
    proc.stdin.write(run.join_token + "\n")  # never on the command line
    proc.stdin.close()
    return proc


def print_report(record: dict) -> None:
    print(f"\n{record['runId']}: {record['totalSamples']} samples from {len(record['workers'])} feeder(s)")
    print(f"  {'WORKER':<12} {'STATUS':<7} {'SAMPLES':>9} {'SAMPLES/S':>10} {'SHARE':>7}")
    for w in record["workers"]:
        print(f"  {w['name']:<12} {w['status']:<7} {w['samples']:>9} {w['samplesPerSec']:>10.1f} "
              f"{w['share'] * 100:>6.1f}%")
    report = record["inputReport"]
    print(f"suspected_input_bottleneck: {record['performance']['suspected_input_bottleneck']}")
    print(f"slow workers: {', '.join(report['slow']) or 'none'}")
    print(report["message"])


def open_and_feed(args) -> int:
    endpoints, keys = pairs(args.worker_endpoint, "--worker-endpoint"), pairs(args.worker_key, "--worker-key")
    with client_for(args) as cs:
        snap = cs.wait_for(state="ACTIVE", timeout=60)
        program = {"fingerprint": "sha256:input-workers", "target_system": snap["serial"],
                   "execmode": snap["activeExecmode"], "mode": "train", "compile_time": 12.0,
                   "est_samples_per_sec": 1e6, "size_bytes": 0}
        with cs.open_run(mode="train", owner="input-workers", workers=args.workers,
                         lease_seconds=args.lease_seconds) as run:
            run.program(program)
            print(f"opened and programmed {run.id}; starting {args.workers} workers", flush=True)
            names = [f"worker-{i + 1}" for i in range(args.workers)]
            procs = [spawn_worker(args, run, n, endpoints.get(n), keys.get(n)) for n in names]
            failed = [n for n, p in zip(names, procs) if p.wait() != 0]
            if failed:
                print(f"workers failed: {', '.join(failed)}", file=sys.stderr)
            run.close()
            print_report(run.record)
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return feed(args) if args.role == "worker" else open_and_feed(args)
    except errors.CsError as exc:
        print(f"error: {exc.message}\n  next: {exc.hint}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
