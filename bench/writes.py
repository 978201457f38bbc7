"""Durable changes: csd's rate of acknowledged changes, one client and 16 concurrent clients,
against the raw SQLite WAL synchronous=FULL one-row commit rate on the same disk.

How: a fresh csd in STANDBY (the only state where the execution mode may change); an admin's
clients toggle it (`config.execmode.setup` WEIGHT_STREAMING, PIPELINED, …; each client starts
at its own place in the cycle, so with 16 clients some requests find the mode already set:
still a durable, audited transaction with its reply stored). Each reply comes only after its
commit, so the client's rate is the durable rate. The raw loop (sqlite_commit.py) runs in
csd's temp dir, on the same filesystem as csd's state. Each repetition runs the three in
rotated order, `duration` s each, as one round (measured again if other users took CPU
meanwhile: suite.rounds); csd's CPU per change comes from /proc/PID/stat.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import load
from contenders import Csd
from stats import busiest, ratios, row, summary, target

NAME = "writes"
HERE = os.path.dirname(os.path.abspath(__file__))
TOGGLE = [{"mode": "WEIGHT_STREAMING"}, {"mode": "PIPELINED"}]


def sqlite_loop(bench, directory: str) -> dict:
    db = os.path.join(directory, "raw-commit.sqlite3")
    argv = bench.pinning.server([sys.executable, os.path.join(HERE, "sqlite_commit.py"), db, str(bench.warmup),
                                 str(bench.duration)])
    load1 = open("/proc/loadavg").read().split()[0]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.unlink(db + suffix)
    return dict(json.loads(out), load1=float(load1))


def run(bench) -> tuple[list[dict], dict]:
    csd = Csd(bench)
    raw: dict[str, list[dict]] = {"seq": [], "conc16": [], "sqlite": []}
    try:
        csd.start()
        csd.standby()
        toggle = csd.target("config.execmode.setup", TOGGLE, key="admin")
        steps = {
            "seq": lambda: load.run(bench, toggle, 1, bench.duration, record_latency=True),
            "conc16": lambda: load.run(bench, toggle, 16, bench.duration, record_latency=True),
            "sqlite": lambda: sqlite_loop(bench, csd.dir),
        }
        names = list(steps)
        for rep in range(bench.reps):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for name, result in bench.rounds(f"rep {rep + 1}", [(n, steps[n]) for n in order]).items():
                raw[name].append(result)
                bench.say(f"  rep {rep + 1} {name:<7} {result['rate']:7,.0f}/s  cpu {result['cpu_us']:6.1f} µs each"
                          f"  p50 {result['p50_us'] / 1000:.2f} ms  load {result['load1']}"
                          f"  others {result['others_cpus']}")
    finally:
        csd.stop()
    return rows(raw), {"runs": raw}


def rows(raw: dict) -> list[dict]:
    def v(name, field):
        return [r[field] for r in raw[name]]

    def busy(*names):
        return busiest(*(v(name, "others_cpus") for name in names))

    return [
        row("change_seq", "durable change (execmode toggle), sequential", summary(v("seq", "rate"), "/s"),
            summary(v("sqlite", "rate"), "/s"), "raw SQLite WAL FULL one-row commit",
            ratios(v("seq", "rate"), v("sqlite", "rate")),
            target(">=", 0.6, "≥ 0.6× raw SQLite"), load=v("seq", "load1"), busy=busy("seq", "sqlite"),
            others={"csd CPU per change": {"value": summary(v("seq", "cpu_us"), "µs")},
                    "SQLite CPU per commit": {"value": summary(v("sqlite", "cpu_us"), "µs")},
                    "csd p50": {"value": summary([x / 1000 for x in v("seq", "p50_us")], "ms")}}),
        row("change_16", "durable change, 16 concurrent clients", summary(v("conc16", "rate"), "/s"),
            summary(v("seq", "rate"), "/s"), "csd sequential", ratios(v("conc16", "rate"), v("seq", "rate")),
            target(">=", 3.0, "≥ 3× sequential (group commit)"), load=v("conc16", "load1"), busy=busy("conc16", "seq"),
            others={"p50": {"value": summary([x / 1000 for x in v("conc16", "p50_us")], "ms")},
                    "p99": {"value": summary([x / 1000 for x in v("conc16", "p99_us")], "ms")},
                    "csd CPU per change": {"value": summary(v("conc16", "cpu_us"), "µs")}}),
    ]
