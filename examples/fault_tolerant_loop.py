"""A training runtime that survives faults: it keeps streaming through a DEGRADED period, and when a
fault aborts its run it waits for the system to be usable again, opens a new run, programs it
and resumes from the samples already done.

    csd --faults examples/faults/warm-then-psu.toml &      # or: cs system fault scenario FILE
    python examples/fault_tolerant_loop.py --samples 40000

What it relies on (docs/protocol.md): events say when health changes (`details.injected` marks a
simulated fault); `RunAborted.fault` names the fault that ended a run; `FaultActive` refuses a new
run while a critical fault lasts; `Client.wait_for(state=..., health=...)` waits for the system to
be usable. Exit codes follow `cs` (README, "Exit codes"); 0 once `--samples` were streamed.
"""

from __future__ import annotations

import argparse
import sys
import time

import connection_options
from csadmin import errors

USABLE = {"OK", "DEGRADED"}  # the health values in which a run may use the system
HEALTH_EVENTS = ("EventHealth", "EventSensor", "EventPsu", "EventPump", "EventEmergency")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    connection_options.add(p)
    p.add_argument("--owner", default="fault-tolerant-loop", help="the runs' owner label")
    p.add_argument("--samples", type=int, default=40_000, help="samples to stream in all")
    p.add_argument("--batch-size", type=int, default=256, help="samples per batch")
    p.add_argument("--batch-seconds", type=float, default=0.05, help="host time to prepare one batch")
    p.add_argument("--size-bytes", type=int, default=1_000_000, help="the compiled program's size")
    p.add_argument("--max-runs", type=int, default=10, help="give up after this many runs")
    p.add_argument("--wait-timeout", type=float, default=300.0, help="seconds to wait for a usable system")
    return p


def say(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", flush=True)


def report(events: list[dict]) -> None:
    """Print what the event stream says about health (the runtime carries on regardless)."""
    for event in events:
        if event["type"].startswith(HEALTH_EVENTS):
            d = event["details"]
            mark = " (injected)" if d.get("injected") else ""
            say(f"event {event['type']}{mark}: systemHealth {d.get('systemHealth')}, fault {d.get('fault')}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    done, runs = 0, 0
    try:
        with connection_options.client(args) as cs, cs.follow() as stream:
            while done < args.samples:
                if runs == args.max_runs:
                    say(f"giving up after {runs} runs ({done} of {args.samples} samples)")
                    return errors.EXIT_STATE
                snap = cs.wait_for(state="ACTIVE", health=USABLE, timeout=args.wait_timeout)
                report(stream.next(0))
                program = {
                    "fingerprint": f"sha256:fault-tolerant-loop-{args.size_bytes}", "target_system": snap["serial"],
                    "execmode": snap["activeExecmode"], "mode": "train", "compile_time": 1.0,
                    "est_samples_per_sec": 5_000.0, "size_bytes": args.size_bytes,
                }
                try:
                    run = cs.open_run(mode="train", owner=args.owner)
                except errors.FaultActive as exc:  # a fault came between the wait and the open
                    say(f"cannot open a run yet: {exc.message}")
                    continue
                runs += 1
                try:
                    with run:
                        say(f"run {runs}: opened {run.id} (systemHealth {snap['systemHealth']}); programming")
                        run.program(program)  # a new run may be programmed once: every run does
                        say(f"run {runs}: streaming from sample {done}")
                        looked = time.monotonic()
                        while done < args.samples:
                            time.sleep(args.batch_seconds)  # the host preparing the next batch
                            batch = min(args.batch_size, args.samples - done)
                            run.stream(batch)
                            done += batch
                            if time.monotonic() - looked >= 0.25:  # news of health, a few times a second
                                report(stream.next(0))
                                looked = time.monotonic()
                        run.close()
                except errors.RunAborted as exc:
                    report(stream.next(0))
                    if exc.fault is None:
                        raise  # aborted by an admin, a lapsed lease, Slurm: not ours to retry
                    say(f"run {runs}: aborted by fault {exc.fault} after {done} samples; "
                        f"waiting for the system to be usable, then resuming")
                except errors.FaultActive as exc:  # the fault struck while programming
                    say(f"run {runs}: {exc.message}; waiting, then resuming from sample {done}")
            say(f"done: {done} samples in {runs} run(s)")
            return errors.EXIT_OK
    except errors.CsError as exc:
        print(f"fault_tolerant_loop: {exc.code}: {exc.message}" + (f"\n{exc.hint}" if exc.hint else ""),
              file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        say(f"interrupted after {done} samples")
        return errors.EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
