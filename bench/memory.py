"""Memory: csd's RSS growth after 100k reads and after 100k `run.stream`, and its idle RSS
next to a bare pyzmq echo+CURVE process's.

How: a fresh csd and a bare echo+CURVE server; both get a few hundred requests, then their idle
RSS (VmRSS from /proc/PID/status) is read. A runtime opens and programs a run; csd's RSS is read,
then 16 clients send `system.show` until 100k replies have come back (chunks of `duration` s),
RSS again, then 16 of the opener's sibling sockets send `run.stream` until 100k more, RSS again.
One pass (RSS growth is a count, not a rate); each reading follows half a second of quiet.
"""

from __future__ import annotations

import time

import load
from contenders import Csd, Echo
from machine import loadavg
from hotops import open_programmed_run, streamers
from stats import row, summary, target

NAME = "memory"
CLIENTS = 16


def drive(bench, tgt: dict, total: int, identities=None, curves=None) -> int:
    """Send requests from CLIENTS clients until `total` replies were counted; return the count."""
    done = 0
    while done < total:
        result = load.run(bench, tgt, CLIENTS, bench.duration, warmup=0.0, identities=identities, curves=curves)
        done += result["count"]
    return done


def settled_rss(server) -> float:
    time.sleep(0.5)
    return server.rss_mb()


def run(bench) -> tuple[list[dict], dict]:
    n = bench.settings.growth_requests
    csd, echo = Csd(bench), Echo(bench, curve=True)
    try:
        csd.start()
        echo.start()
        load.run(bench, csd.target(), 1, 0.2, warmup=0.0)
        load.run(bench, echo.target(), 1, 0.2, warmup=0.0)
        idle = {"csd": settled_rss(csd), "echo+CURVE": settled_rss(echo)}
        echo.stop()
        client, r = open_programmed_run(csd)
        ids, curves = streamers(csd, client, CLIENTS)
        before = settled_rss(csd)
        load1, meter = [loadavg()[0]], bench.meter()
        reads = drive(bench, csd.target(), n)
        busy = [meter.read()]
        after_reads = settled_rss(csd)
        bench.say(f"  {reads:,} reads: RSS {before:.1f} → {after_reads:.1f} MB")
        load1.append(loadavg()[0])
        meter = bench.meter()
        stream = csd.target("run.stream", [{"run_id": r.id, "samples": 1}])
        streams = drive(bench, stream, n, ids, curves)
        busy.append(meter.read())
        after_streams = settled_rss(csd)
        bench.say(f"  {streams:,} run.stream: RSS {after_reads:.1f} → {after_streams:.1f} MB")
        client.close()
    finally:
        csd.stop()
        echo.stop()
    raw = {"idle_mb": idle, "others_cpus": busy, "before_mb": before, "after_reads_mb": after_reads,
           "after_streams_mb": after_streams,
           "reads": reads, "streams": streams}
    mb = lambda x: summary([x], "MB")  # noqa: E731
    k = f"{n // 1000}k"
    return [
        row("rss_reads", f"RSS growth after {k} reads (`system.show`, 16 clients)", mb(after_reads - before),
            target=target("<=", 2.0, "≤ 2 MB"), load=load1[:1], busy=busy[:1],
            others={"RSS before": {"value": mb(before)}, "after": {"value": mb(after_reads)}}),
        row("rss_stream", f"RSS growth after {k} `run.stream` (16 sibling sockets)", mb(after_streams - after_reads),
            target=target("<=", 2.0, "≤ 2 MB"), load=load1[1:], busy=busy[1:],
            others={"RSS before": {"value": mb(after_reads)}, "after": {"value": mb(after_streams)}}),
        row("rss_idle", "idle RSS (fresh csd, after a few requests)", mb(idle["csd"]), mb(idle["echo+CURVE"]),
            "bare echo+CURVE process", target=None, load=load1[:1],
            others={"difference": {"value": mb(idle["csd"] - idle["echo+CURVE"])}},
            note="docs/design.md: within ~3 MB of the bare echo"),
    ], raw
