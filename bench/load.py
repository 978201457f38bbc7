"""Drive a server with N concurrent clients from separate load-generator processes (loadgen.py)
and measure it from outside: replies per second inside a fixed window, latency percentiles,
and the server's CPU per request from /proc/PID/stat (all threads, and the main thread that
runs Python) over the same window.

    result = load.run(bench, target, clients=16, duration=2.0)

`target` (a dict, made by contenders.py) says how to reach the server and what to send.
Clients are spread over `workers(clients)` processes; every contender gets the same layout
and the same pinning.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from machine import cpu_seconds, loadavg
from stats import percentile


def workers(clients: int) -> int:
    """Load-generator processes for `clients` clients: one for a single client, else two (one
    per core of the 2-core machines this suite was written for; more processes only add
    context switches there)."""
    return 1 if clients == 1 else min(clients, max(2, (os.cpu_count() or 2)))


def _read_line(proc: subprocess.Popen, what: str) -> dict:
    line = proc.stdout.readline()
    if not line:
        proc.wait()
        raise RuntimeError(f"a load generator exited ({proc.returncode}) before {what}")
    return json.loads(line)


def run(bench, target: dict, clients: int, duration: float, warmup: float | None = None,
        identities: list[str] | None = None, curves: list[dict] | None = None, record_latency: bool = False,
        server_pid: int | None = None) -> dict:
    """Measure `target` under `clients` closed-loop clients for `duration` seconds (after
    `warmup` seconds of the same load). `identities` gives the clients' socket identities
    (default: random) and `curves` their CURVE keys (default: the target's, one key for all).
    Returns rate (per s), cpu_us (server CPU per request, all threads), cpu_main_us (its main
    thread), p50_us/p99_us when `record_latency`, the load average, the CPUs other users kept
    busy during the window, and counts."""
    warmup = bench.warmup if warmup is None else warmup
    identities = identities or [None] * clients
    n_workers = workers(clients)
    procs = []
    for w in range(n_workers):
        spec = dict(target["spec"], identities=identities[w::n_workers], record_latency=record_latency,
                    tag=f"{target.get('tag', 'b')}{w}x")
        if curves:
            spec["curves"] = curves[w::n_workers]
        procs.append(bench.spawn_client("loadgen.py", spec))
    try:
        for p in procs:
            _read_line(p, "its clients were connected")
        start = time.monotonic_ns() + 50_000_000
        window = (start + int(warmup * 1e9), start + int((warmup + duration) * 1e9))
        go = json.dumps({"start": start, "from": window[0], "to": window[1]}) + "\n"
        for p in procs:
            p.stdin.write(go)
            p.stdin.flush()
        pid = server_pid or target.get("pid")
        load = loadavg()[0]
        _sleep_until(window[0])
        cpu0, t0, meter = (cpu_seconds(pid) if pid else (0.0, 0.0)), time.monotonic_ns(), bench.meter()
        _sleep_until(window[1])
        cpu1, t1, others = (cpu_seconds(pid) if pid else (0.0, 0.0)), time.monotonic_ns(), meter.read()
        results = [_read_line(p, "it reported") for p in procs]
    finally:
        bench.reap(procs, timeout=30)
    count = sum(r["count"] for r in results)
    errors = sum(r["errors"] for r in results)
    if errors:
        first = next(r["first_error"] for r in results if r["first_error"])
        raise RuntimeError(f"{target['name']}: {errors} requests failed, e.g. {first}")
    if count == 0:
        raise RuntimeError(f"{target['name']}: no reply inside the measurement window")
    seconds = (t1 - t0) / 1e9
    out = {
        "name": target["name"], "clients": clients, "workers": n_workers, "count": count,
        "rate": count / duration, "load1": load, "others_cpus": others,
    }
    if pid:
        out["cpu_us"] = (cpu1[0] - cpu0[0]) / seconds * 1e6 / out["rate"]
        out["cpu_main_us"] = (cpu1[1] - cpu0[1]) / seconds * 1e6 / out["rate"]
        out["cpu_cores"] = (cpu1[0] - cpu0[0]) / seconds
    if record_latency:
        lat = sorted(x for r in results for x in r["lat_us"])
        out.update(p50_us=percentile(lat, 50), p99_us=percentile(lat, 99), max_us=lat[-1] if lat else None)
    return out


def _sleep_until(t_ns: int) -> None:
    while True:
        left = (t_ns - time.monotonic_ns()) / 1e9
        if left <= 0:
            return
        time.sleep(min(left, 0.05))
