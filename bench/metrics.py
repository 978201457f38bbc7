"""Metrics: what csd's Prometheus metrics cost its serving loop (issue #13: "the HTTP listener must
not slow the serving loop (measure it)").

How: two csd from the wheel, one as shipped and one with `--metrics-endpoint 0` (its listener on a
free loopback port, found in the `metrics_url` of its csd.json). Each repetition measures, in
rotated order, 16 closed-loop clients doing `system.show` for `duration` s against: csd without
metrics; csd with metrics while a thread of the driver scrapes it at Prometheus' pace (one GET
/metrics every 0.25 s); and csd with metrics while 4 driver threads GET /metrics as fast as they
are answered (a storm the listener's pacing must absorb). Figures: req/s, and csd's CPU per
request (all threads, /proc), with and without metrics, paired within the repetition.
"""

from __future__ import annotations

import http.client
import json
import threading
import time

import load
from contenders import Csd
from stats import busiest, ratios, row, summary, target

NAME = "metrics"
CLIENTS = 16


class Scrapers:
    """`threads` threads GETting /metrics from `port`, each every `every` s (0: back to back),
    until stopped; `count` the answers."""

    def __init__(self, port: int, threads: int, every: float):
        self.port, self.every = port, every
        self.count = 0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._scrape, daemon=True) for _ in range(threads)]

    def _scrape(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        while not self._stop.is_set():
            try:
                conn.request("GET", "/metrics")
                conn.getresponse().read()
                self.count += 1
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            if self.every:
                self._stop.wait(self.every)

    def __enter__(self) -> "Scrapers":
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=15)


def metrics_port(csd: Csd) -> int:
    with open(csd.connection_file) as f:
        url = json.load(f)["metrics_url"]
    return int(url.rsplit(":", 1)[1].split("/")[0])


def run(bench) -> tuple[list[dict], dict]:
    plain = Csd(bench, name="csd-plain")
    served = Csd(bench, name="csd-metrics", extra_args=("--metrics-endpoint", "0"))
    raw: dict[str, list[dict]] = {"off": [], "prom": [], "storm": []}
    try:
        plain.start()
        served.start()
        port = metrics_port(served)

        def step(name):
            csd, scrapers = {"off": (plain, None), "prom": (served, (1, 0.25)), "storm": (served, (4, 0.0))}[name]

            def measure():
                if scrapers is None:
                    return load.run(bench, csd.target("system.show"), CLIENTS, bench.duration)
                with Scrapers(port, *scrapers) as s:
                    started = time.monotonic()
                    result = load.run(bench, csd.target("system.show"), CLIENTS, bench.duration)
                    result["scrapes_per_s"] = s.count / (time.monotonic() - started)
                return result

            return measure

        names = list(raw)
        for rep in range(bench.reps):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for name, result in bench.rounds(f"rep {rep + 1}", [(n, step(n)) for n in order]).items():
                raw[name].append(result)
                bench.say(f"  rep {rep + 1} {name:<6} {result['rate']:8,.0f} req/s  cpu {result['cpu_us']:5.1f} µs/req"
                          f"  scrapes {result.get('scrapes_per_s', 0):5.1f}/s  others {result['others_cpus']}")
    finally:
        plain.stop()
        served.stop()
    return rows(raw), {"runs": raw}


def rows(raw: dict) -> list[dict]:
    def rates(name):
        return [r["rate"] for r in raw[name]]

    def cpu(name):
        return [r["cpu_us"] for r in raw[name]]

    out = []
    for name, label in (("prom", "scraped every 0.25 s"), ("storm", "4 scrapers back to back")):
        scrapes = summary([r.get("scrapes_per_s") for r in raw[name]], "/s")
        out.append(row(
            f"metrics_{name}", f"`system.show` req/s, 16 clients, csd with metrics {label}",
            summary(rates(name), "req/s"), summary(rates("off"), "req/s"), "csd without metrics",
            ratios(rates(name), rates("off")), target(">=", 0.9, "≥ 0.9× without"),
            load=[r["load1"] for r in raw[name]], busy=busiest(*([r["others_cpus"] for r in raw[n]] for n in (name, "off"))),
            others={"csd CPU per request": {"value": summary(cpu(name), "µs")},
                    "without metrics": {"value": summary(cpu("off"), "µs")}, "scrapes answered": {"value": scrapes}},
        ))
    return out
