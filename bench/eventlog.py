"""The event log at scale: with 10⁴, 10⁵ and 10⁶ kept events, csd's restart time (spawn until
it answers `system.show`) and RSS, `events.show --max-count 1000` time, and the p50 of a
durable change — against the same csd with an empty log.

How: a template csd is started once (keys made, put in STANDBY) and stopped; its state dir is
copied per size and filled with that many events by prefill.py (rows written straight into the
stopped csd's SQLite `events` table, in daemon/store/store.py's format; csd then runs with
`--keep-events` = size + 10,000). Each repetition, for each size, starts csd on a fresh copy of
that store (so the changes of one repetition do not grow the next one's log) and times it to
its first answer, reads its RSS, checks it reports the prefilled events (so a changed store
format cannot pass unnoticed), times `events.show` with max_count 1000 from a client in this
process (one warm-up call, then 5), times `kept_changes` sequential execution-mode toggles from
an admin client in this process (their p50, client included), and stops it. One csd runs at a
time; a repetition's sizes are one round (measured again if other users took CPU meanwhile:
suite.rounds).
"""

from __future__ import annotations

import shutil
import statistics
import time

from contenders import Csd
from machine import loadavg
from prefill import prefill
from stats import busiest, ratios, row, summary, target
from writes import TOGGLE

NAME = "eventlog"
EVENTS_SHOW_CALLS = 5


def measure_once(bench, csd: Csd, last_seq: int | None) -> dict:
    load1 = loadavg()[0]
    start_s = csd.start()
    time.sleep(0.2)
    rss = csd.rss_mb()
    with csd.client("viewer", timeout=120) as c:
        snap = c.system_show()
        newest = c.events_show(max_count=1)
        if last_seq is not None and (snap["seq"] < last_seq or not newest or newest[-1]["seq"] < last_seq):
            raise RuntimeError(f"csd does not report the prefilled events (seq {snap['seq']}, expected ≥ {last_seq}): "
                               "the store format changed; update bench/prefill.py")
        c.events_show(max_count=1000)
        times = []
        for _ in range(EVENTS_SHOW_CALLS):
            t0 = time.perf_counter()
            shown = c.events_show(max_count=1000)
            times.append(time.perf_counter() - t0)
        assert len(shown) == min(1000, snap["seq"]), len(shown)
    with csd.client("admin", timeout=120) as c:
        changes = []
        for i in range(bench.settings.kept_changes + 1):
            t0 = time.perf_counter()
            c.execmode_setup(TOGGLE[i % 2]["mode"])
            changes.append(time.perf_counter() - t0)
    csd.stop()
    changes = sorted(changes[1:])  # the first one opens the connection
    return {"start_s": start_s, "rss_mb": rss, "events_show_ms": statistics.median(times) * 1000,
            "change_p50_ms": statistics.median(changes) * 1000, "changes": len(changes), "load1": load1}


def run(bench) -> tuple[list[dict], dict]:
    sizes = bench.settings.kept_sizes
    template = Csd(bench, name="kept-template")
    template.start()
    template.standby()
    template.stop()
    template.keep_secrets_in_state_dir()
    stores = {0: (template.state_dir, None)}
    for size in sizes:
        t0 = time.monotonic()
        copy = bench.tmpdir(f"kept{size}") + "/state"
        shutil.copytree(template.state_dir, copy)
        stores[size] = (copy, prefill(copy, size))
        bench.say(f"  prefilled {size:,} events in {time.monotonic() - t0:.1f} s")
    def step(size: int):
        def measure() -> dict:
            master, last_seq = stores[size]
            work = bench.tmpdir(f"kept{size}-run")
            shutil.copytree(master, work + "/state")
            csd = Csd(bench, name=f"csd-kept{size}", state_dir=work + "/state", keep_events=size + 10_000)
            try:
                return measure_once(bench, csd, last_seq)
            finally:
                csd.stop()
                shutil.rmtree(work, ignore_errors=True)
        return measure

    raw: dict[str, list[dict]] = {str(size): [] for size in stores}
    for rep in range(bench.reps):
        for name, result in bench.rounds(f"rep {rep + 1}", [(str(size), step(size)) for size in stores]).items():
            raw[name].append(result)
            bench.say(f"  rep {rep + 1} {int(name):>9,} kept: start {result['start_s']:6.2f} s"
                      f"  RSS {result['rss_mb']:6.1f} MB"
                      f"  events.show {result['events_show_ms']:7.1f} ms  change p50 {result['change_p50_ms']:6.2f} ms"
                      f"  load {result['load1']}  others {result['others_cpus']}")
    for state_dir, _ in stores.values():
        shutil.rmtree(state_dir, ignore_errors=True)
    return rows(raw, sizes), {"runs": raw}


def rows(raw: dict, sizes) -> list[dict]:
    small, big = str(sizes[0]), str(sizes[-1])

    def v(size, field):
        return [r[field] for r in raw[size]]

    def each(field, unit):
        return {f"{int(s):,} kept" if s != "0" else "empty log": {"value": summary(v(s, field), unit)} for s in raw}

    rss_growth = [a - b for a, b in zip(v(big, "rss_mb"), v("0", "rss_mb"))]
    n = f"{int(big):,}"
    busy = busiest(*(v(size, "others_cpus") for size in raw))
    return [
        row("change_kept", f"durable change p50 with {n} kept events", summary(v(big, "change_p50_ms"), "ms"),
            summary(v(small, "change_p50_ms"), "ms"), f"with {int(small):,} kept",
            ratios(v(big, "change_p50_ms"), v(small, "change_p50_ms")), target("<=", 1.2, "≤ 1.2× (flat)"),
            load=v(big, "load1"), busy=busy, others=each("change_p50_ms", "ms")),
        row("restart_kept", f"restart with {n} kept events: time to answer", summary(v(big, "start_s"), "s"),
            target=target("<=", 2.0, "≤ 2 s"), load=v(big, "load1"), busy=busy, others=each("start_s", "s")),
        row("rss_kept", f"RSS with {n} kept events, above an empty log's", summary(rss_growth, "MB"),
            target=target("<=", 10.0, "≤ idle + 10 MB"), load=v(big, "load1"), busy=busy, others=each("rss_mb", "MB")),
        row("events_show_kept", f"`events show --max-count 1000` with {n} kept events",
            summary(v(big, "events_show_ms"), "ms"), summary(v(small, "events_show_ms"), "ms"),
            f"with {int(small):,} kept", ratios(v(big, "events_show_ms"), v(small, "events_show_ms")),
            target("<=", 1.2, "≤ 1.2×"), load=v(big, "load1"), busy=busy, others=each("events_show_ms", "ms"),
            note="one client call, in-process (median of 5)"),
    ]
