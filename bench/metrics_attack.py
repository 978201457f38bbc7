"""Scrapes at Prometheus' pace while hostile clients hold csd's metrics listener (issue 24's
"done when": under one slowloris client and under 256 half-open connections, >= 99% of scrapes
every 1 s answered within the 5 s deadline; csd's RSS and threads bounded; the request path
unaffected).

Run by hand: `python bench/metrics_attack.py [--scrapes N] [--baseline-source DIR]`. Starts a
real csd as shipped (`--metrics-endpoint 0`, CURVE, ipc, a real store) and, in turn, with
  none       no attacker (the baseline)
  slowloris  one client sending a header line every 4 s and never ending its request
  half-open  256 connections that send nothing or half a request line, reopened when closed
  both       the two at once
scrapes /metrics N times, 1 s apart (Prometheus' pace), each with the 5 s deadline, while an
admin's `system.show` goes every 10 ms (its p50/p99: the request path); it reads csd's RSS and
threads from /proc before and after each phase. With --baseline-source (a checkout of the
listener before issue 24, e.g. /work/main), the slowloris and half-open phases are run against
that csd too, with fewer scrapes (each unanswered one waits out its 5 s). The attackers and the
paced scraper are tests/fuzz/http_clients.py's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVING = sys.argv[1:2] == ["--serve"]  # csd itself: from the source its PYTHONPATH names
if not SERVING:
    sys.path.insert(0, ROOT)
    sys.path.insert(0, os.path.join(ROOT, "bench"))

DEADLINE = 5.0
PHASES = ("none", "slowloris", "half-open", "both")


def start(source: str, tmp: str):
    from denial_flood import start_csd

    proc, admin, _ = start_csd(source, tmp, daemon=[sys.executable, os.path.abspath(__file__), "--serve"])
    with open(os.path.join(tmp, "csd.json")) as f:
        port = int(json.load(f)["metrics_url"].split(":")[2].split("/")[0])
    return proc, admin, port


def proc_status(pid: int) -> tuple[int, int]:
    """(RSS in KB, threads)."""
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f)
    return int(fields["VmRSS"].split()[0]), int(fields["Threads"])


def paced_round_trips(tmp: str, admin: str, stop: threading.Event, samples: list) -> None:
    from csadmin.client import Client

    with Client(connect=f"{tmp}/csd.json", key=admin, timeout=30) as c:
        while not stop.is_set():
            t0 = time.perf_counter()
            c.system_show()
            samples.append((time.perf_counter() - t0) * 1e6)
            stop.wait(0.01)


def serve(argv: list[str]) -> int:
    """csd as shipped, with `--metrics-endpoint 0` (a free loopback port, written to csd.json)."""
    from csadmin.daemon import main

    return main.main(argv if argv[:1] == ["keys"] else [*argv, "--metrics-endpoint", "0"])


def phase(name: str, port: int, tmp: str, admin: str, pid: int, scrapes: int) -> dict:
    from tests.fuzz.http_clients import HalfOpen, Slowloris, scrape_paced

    attackers = []
    if name in ("slowloris", "both"):
        attackers.append(Slowloris(port, every=4.0).start())
    if name in ("half-open", "both"):
        attackers.append(HalfOpen(port, 256).start())
    deadline = time.monotonic() + 30
    while any(isinstance(a, HalfOpen) and a.open < 256 for a in attackers) and time.monotonic() < deadline:
        time.sleep(0.05)  # the attack under way before the first scrape
    before = proc_status(pid)
    stop, trips = threading.Event(), []
    tripper = threading.Thread(target=paced_round_trips, args=(tmp, admin, stop, trips), daemon=True)
    tripper.start()
    result = scrape_paced(port, scrapes, every=1.0, deadline=DEADLINE)
    stop.set()
    tripper.join()
    after = proc_status(pid)
    for attacker in attackers:
        attacker.stop()
    trips.sort()
    times = sorted(s for s in result.seconds if s is not None)
    return {"phase": name, "answered": result.answered, "scrapes": len(result.seconds),
            "median_ms": statistics.median(times) * 1000 if times else None,
            "max_ms": times[-1] * 1000 if times else None,
            "p50_us": trips[len(trips) // 2] if trips else None, "p99_us": trips[int(len(trips) * 0.99)] if trips else None,
            "rss_kb": (before[0], after[0]), "threads": (before[1], after[1]),
            "closed": sum(a.closed_by_server for a in attackers)}


def run(source: str, phases, scrapes: int, label: str) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-metrics-attack-") as tmp:
        proc, admin, port = start(source, tmp)
        try:
            for name in phases:
                row = phase(name, port, tmp, admin, proc.pid, scrapes)
                row["listener"] = label
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    return rows


def table(rows: list[dict]) -> str:
    def ms(v):
        return "–" if v is None else f"{v:.1f} ms"

    lines = ["| listener | attack | scrapes answered in 5 s | median / slowest | system.show p50 / p99 | csd RSS before → after | threads |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        share = 100 * r["answered"] / r["scrapes"]
        lines.append(f"| {r['listener']} | {r['phase']} | {r['answered']}/{r['scrapes']} ({share:.0f}%) | "
                     f"{ms(r['median_ms'])} / {ms(r['max_ms'])} | {r['p50_us']:.0f} / {r['p99_us']:.0f} µs | "
                     f"{r['rss_kb'][0] / 1024:.1f} → {r['rss_kb'][1] / 1024:.1f} MB | "
                     f"{r['threads'][0]} → {r['threads'][1]} |")
    return "\n".join(lines)


def main() -> None:
    if SERVING:
        raise SystemExit(serve(sys.argv[2:]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scrapes", type=int, default=60)
    parser.add_argument("--baseline-source", help="a checkout with the listener before issue 24 (e.g. /work/main)")
    parser.add_argument("--baseline-scrapes", type=int, default=15)
    args = parser.parse_args()
    rows = run(ROOT, PHASES, args.scrapes, "this tree")
    if args.baseline_source:
        rows += run(args.baseline_source, ("slowloris", "half-open"), args.baseline_scrapes, "before (one thread)")
    print(table(rows))


if __name__ == "__main__":
    main()
