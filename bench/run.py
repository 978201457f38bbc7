"""Run csd's benchmark suite (issue #12): `python bench/run.py` (all figures, ~20 min),
`--quick` (a smoke run: every code path, figures meaningless), `--only fanout,reads` (some
figures), `--pin 0:1` (servers on CPU 0, load generators on CPU 1), `--record before|after`
(write this run's figures into that column of bench/RESULTS.md). See bench/README.md.

Two stages. This file first runs on any Python ≥ 3.11 with the stdlib only: it builds the
throwaway venvs (venvs.py) in a temp dir, then runs itself again inside the csd venv, where
pyzmq and the installed csd are; that second stage runs the figures, writes
bench/results/<time>-<commit>.json, the plot and, with --record, RESULTS.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# In the order they run: the short, load-sensitive ones first, the long event-log one last.
FIGURES = ("oneshot", "shell", "reads", "hotops", "metrics", "writes", "fanout", "memory", "eventlog")
MODULES = {"oneshot": "oneshot", "shell": "shell_prompt", "reads": "reads", "hotops": "hotops", "metrics": "metrics",
           "writes": "writes", "fanout": "fanout", "memory": "memory", "eventlog": "eventlog"}


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="bench/run.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="smoke run: tiny counts, one repetition")
    p.add_argument("--only", default="", help=f"comma-separated figures to run (default all: {','.join(FIGURES)})")
    p.add_argument("--reps", type=int, default=None, help="repetitions (default 3; 1 with --quick)")
    p.add_argument("--pin", nargs="?", const="0:1", default="",
                   help="pin with taskset: SERVER_CPUS[:CLIENT_CPUS]; `--pin` alone means 0:1 (default: not pinned)")
    p.add_argument("--record", choices=("before", "after"), help="write the figures into this column of RESULTS.md")
    p.add_argument("--venvs", metavar="DIR", help="keep the contenders' venvs in DIR and reuse them (default: temp)")
    p.add_argument("--keep-tmp", action="store_true", help="keep the temp dir (servers' logs and state)")
    p.add_argument("--quiet-below", type=float, default=0.3,
                   help="other users may keep fewer than this many CPUs busy: waited for before each figure, and a "
                        "round of measurements during which they took more is measured again (default 0.3)")
    p.add_argument("--quiet-wait", type=float, default=180.0,
                   help="wait at most this many seconds for that (default 180)")
    p.add_argument("--out", default=os.path.join(HERE, "results"), help="where results JSON files go")
    p.add_argument("--stage2", help=argparse.SUPPRESS)  # JSON: tmp dir and venvs, from stage 1
    args = p.parse_args(argv)
    args.figures = [f.strip() for f in args.only.split(",") if f.strip()] or list(FIGURES)
    if args.record and args.quick:
        p.error("--record writes RESULTS.md: a --quick run's figures mean nothing, so it cannot be recorded")
    unknown = [f for f in args.figures if f not in FIGURES]
    if unknown:
        p.error(f"unknown figure(s) {', '.join(unknown)}; choose from {', '.join(FIGURES)}")
    return args


def stage1(args: argparse.Namespace, argv: list[str]) -> int:
    """Build the venvs, then run stage 2 in the csd venv; clean up the temp dir after."""
    sys.path.insert(0, HERE)
    import venvs

    tmp = tempfile.mkdtemp(prefix="csbench-")
    try:
        t0 = time.monotonic()
        made = venvs.prepare(ROOT, tmp, args.venvs, say=lambda m: print(f"[setup] {m}", flush=True))
        print(f"[setup] venvs ready in {time.monotonic() - t0:.0f} s", flush=True)
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        stage2 = json.dumps({"tmp": tmp, "venvs": made})
        proc = subprocess.Popen([os.path.join(made["csd"], "bin", "python"), os.path.join(HERE, "run.py"), *argv,
                                 "--stage2", stage2], env=env, cwd=tmp)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            # Stage 2 got the same Ctrl-C: let it stop its servers and write what it measured.
            try:
                return proc.wait(timeout=60)
            except (KeyboardInterrupt, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
                return 130
    except KeyboardInterrupt:
        return 130
    finally:
        if args.keep_tmp:
            print(f"[setup] temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def stage2(args: argparse.Namespace) -> int:
    import machine
    import report
    import venvs
    from suite import Bench, Settings

    given = json.loads(args.stage2)
    settings = Settings(args.quick, args.reps)
    bench = Bench(ROOT, given["tmp"], given["venvs"], settings, args.pin, args.quiet_below, args.quiet_wait)
    started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    results = {
        "meta": {
            "started": started, "quick": args.quick, "figures": args.figures, "git": machine.git_commit(ROOT),
            "machine": machine.info(), "versions": venvs.versions(given["venvs"]),
            "settings": {**vars(settings), "pin": args.pin, "pinning": bench.pinning.describe(),
                         "quiet_below_cpus": args.quiet_below},
            "loadavg_start": machine.loadavg(),
        },
        "conditions": {}, "rows": [], "raw": {},
    }
    failed = []
    try:
        for name in args.figures:
            module = importlib.import_module(MODULES[name])
            bench.say(f"{name}: {module.__doc__.strip().splitlines()[0]}")
            before = machine.wait_for_quiet(args.quiet_below, 0 if args.quick else args.quiet_wait, say=bench.say)
            waited = f"; waited {before['waited_s']:.0f} s for that" if before["waited_s"] >= 1 else ""
            bench.say(f"  other users keep {before['others_busy_cpus']} CPUs busy, load average "
                      f"{' '.join(map(str, before['loadavg']))}{waited}")
            t0 = time.monotonic()
            try:
                rows, raw = module.run(bench)
            except Exception as exc:  # one broken figure must not lose the others
                traceback.print_exc()
                bench.say(f"{name}: FAILED: {type(exc).__name__}: {exc}")
                failed.append(name)
                results["conditions"][name] = {"before": before, "error": f"{type(exc).__name__}: {exc}"}
                continue
            finally:
                bench.stop_all()
            results["conditions"][name] = {"before": before, "loadavg_after": machine.loadavg(),
                                           "seconds": round(time.monotonic() - t0, 1)}
            for r in rows:
                r["figure"] = name
            results["rows"] += rows
            results["raw"][name] = raw
            for r in rows:
                bench.say("  " + report.one_line(r))
    except KeyboardInterrupt:
        bench.say("interrupted: writing what was measured")
        failed.append("interrupted")
    finally:
        bench.stop_all()
    results["meta"]["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    results["meta"]["loadavg_end"] = machine.loadavg()
    results["meta"]["failed"] = failed
    path = report.save(results, args.out)
    bench.say(f"results: {os.path.relpath(path, ROOT)}")
    interrupted = "interrupted" in failed
    if "reads" in args.figures and "reads" not in failed and not interrupted:
        png = report.plot(bench, path, path[:-len(".json")] + ".png" if args.quick else report.PLOT)
        if png:
            bench.say(f"plot: {os.path.relpath(png, ROOT)}")
    if args.record and interrupted:
        bench.say(f"RESULTS.md left as it was: an interrupted run is not recorded (its file is {path})")
    elif args.record:
        report.record(path, args.record)
        failed_note = f" (figures that failed: {', '.join(failed)})" if failed else ""
        bench.say(f"RESULTS.md: column '{args.record}' now shows {os.path.basename(path)}{failed_note}")
    print(report.table(results))
    return 1 if failed else 0


def main() -> int:
    argv = sys.argv[1:]
    args = parse_args(argv)
    if args.stage2:
        return stage2(args)
    return stage1(args, argv)


if __name__ == "__main__":
    sys.exit(main())
