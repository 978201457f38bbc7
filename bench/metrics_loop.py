"""What the metrics cost csd's serving loop, with and without a scraper hammering the listener
(issue 13: "the HTTP listener must not slow the serving loop (measure it)").

Run by hand: `python bench/metrics_loop.py [--seconds S] [--rounds R]`. Starts a real csd (CURVE,
ipc sockets, a real state store) for each configuration below, in turn, R rounds, and measures
`system.show` from an admin key: one client's round trips (p50/p99) and the throughput of one
socket with 16 requests in flight. Configurations:
  off        csd as shipped (no metrics)
  on         the metric set updated by the loop (daemon/metrics/metric_set.py) and the listener idle
  prom       ... and a Prometheus-like scraper: one GET /metrics every 0.25 s
  hammer     ... and 4 clients GETting /metrics as fast as the listener answers
  raw-hammer the same storm with the listener's render cache and pacing turned off
             (render_seconds=0, min_interval=0): a render per scrape, as prometheus_client's
             own server does
csd runs as shipped, with `--metrics-endpoint 0` for every configuration but `off` (this file's
`--serve` only turns the listener's cache and pacing off for `raw-hammer`).
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))  # denial_flood.start_csd

CONFIGS = ("off", "on", "prom", "hammer", "raw-hammer")


# -- the csd side: the real daemon, with the metrics hooked in ------------------------------------------


def serve(argv: list[str]) -> int:
    """csd as shipped, with `--metrics-endpoint 0` unless the config is `off`; for `raw-hammer`,
    with the listener's render cache and pacing turned off."""
    from csadmin.daemon import main
    from csadmin.daemon.metrics import listener as metrics_listener

    if os.environ["BENCH_METRICS"] != "off" and argv[:1] != ["keys"]:
        argv = [*argv, "--metrics-endpoint", "0"]  # a free loopback port, written to csd.json
    if os.environ["BENCH_METRICS"] == "raw-hammer":
        listener_init = metrics_listener.MetricsListener.__init__

        def raw(self, *args, **kwargs):
            listener_init(self, *args, **{**kwargs, "render_seconds": 0, "min_interval": 0})

        metrics_listener.MetricsListener.__init__ = raw
    return main.main(argv)


# -- the bench side ---------------------------------------------------------------------------------------


def start_csd(tmp: str, config: str):
    """csd with metrics as `config` says; (process, admin key, the listener's port or None)."""
    from denial_flood import start_csd as start

    import json

    proc, admin, _ = start(ROOT, tmp, daemon=[sys.executable, os.path.abspath(__file__), "--serve"],
                           env={"BENCH_METRICS": config})
    port = None
    if config != "off":
        with open(os.path.join(tmp, "csd.json")) as f:
            port = int(json.load(f)["metrics_url"].split(":")[2].split("/")[0])
    return proc, admin, port


def scrape(port: int, stop, counter, threads: int, every: float) -> None:
    """GET /metrics on `threads` threads, each every `every` s (0: as fast as answered)."""
    done = [0] * threads

    def one(i):
        while not stop.is_set():
            t0 = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/metrics", headers={"Accept": "application/openmetrics-text;version=1.0.0"})
            conn.getresponse().read()
            conn.close()
            done[i] += 1
            if every:
                stop.wait(max(0.0, every - (time.monotonic() - t0)))

    workers = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    counter.value += sum(done)


def round_trips(tmp: str, admin: str, seconds: float) -> list[float]:
    from csadmin.client import Client

    samples = []
    with Client(connect=f"{tmp}/csd.json", key=admin, timeout=30) as c:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            t0 = time.perf_counter()
            c.system_show()
            samples.append((time.perf_counter() - t0) * 1e6)
    return samples


def throughput(tmp: str, admin: str, seconds: float, in_flight: int = 16) -> float:
    import zmq
    from denial_flood import dealer

    from csadmin.shared import protocol

    ctx = zmq.Context()
    s = dealer(ctx, f"{tmp}/csd.json", admin)
    n = done = 0
    for _ in range(in_flight):
        n += 1
        s.send(protocol.request(f"t{n}", "system.show"))
    started = time.monotonic()
    end = started + seconds
    while time.monotonic() < end:
        if s.poll(1000):
            s.recv()
            done += 1
            n += 1
            s.send(protocol.request(f"t{n}", "system.show"))
    elapsed = time.monotonic() - started
    s.close(0)
    ctx.term()
    return done, elapsed


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used (all its threads: the loop and the listener)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(config: str, seconds: float) -> dict:
    tmp = tempfile.mkdtemp(prefix="csd-metrics-bench-")
    proc, admin, port = start_csd(tmp, config)
    stop, counter = multiprocessing.Event(), multiprocessing.Value("q", 0)
    scraper = None
    if config in ("prom", "hammer", "raw-hammer"):
        threads, every = (1, 0.25) if config == "prom" else (4, 0)
        scraper = multiprocessing.Process(target=scrape, args=(port, stop, counter, threads, every))
        scraper.start()
        time.sleep(0.5)  # the scraper at full speed before measuring
    try:
        started = time.monotonic()
        latencies = round_trips(tmp, admin, seconds)
        cpu_before = cpu_seconds(proc.pid)
        done, busy = throughput(tmp, admin, seconds)
        cpu = cpu_seconds(proc.pid) - cpu_before
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        if scraper is not None:
            scraper.join()
        proc.terminate()
        proc.wait()
    return {"latencies": latencies, "rate": done / busy, "cpu_us": cpu / done * 1e6,
            "scrapes_per_s": counter.value / (elapsed + 0.5)}


def micro(n: int = 200_000) -> None:
    """What each loop-side call costs, in-process (no csd): the per-request and per-change price."""
    import timeit

    from csadmin import __version__, errors
    from csadmin.daemon.commands import COMMANDS
    from csadmin.daemon.metrics.metric_set import Metrics
    from prometheus_client.exposition import choose_encoder

    m = Metrics(__version__, COMMANDS, errors.WIRE_CODES)
    show = {"serial": "CS2-0001", "state": "ACTIVE", "systemHealth": "OK", "activeExecmode": "PIPELINED",
            "configuredExecmode": "PIPELINED", "seq": 1,
            "runHolder": {"runId": "run-000001", "owner": "job", "mode": "train", "fabric": "PROGRAMMED"}}
    event = {"type": "EventTrainingStarted", "details": {}}
    print("loop-side cost per call, in-process, best of 5:")
    for name, call in (("observe_request", lambda: m.observe_request("system.show", "ok", 0.0001)),
                       ("observe_event", lambda: m.observe_event(event)),
                       ("observe_samples", lambda: m.observe_samples(64)),
                       ("publish(show)", lambda: m.publish(show))):
        best = min(timeit.repeat(call, number=n, repeat=5)) / n
        print(f"  {name:16s} {best * 1e6:6.2f} µs")
    # A render as a scrape does it, with every op answered ok and a few refusals seen.
    for op in COMMANDS:
        m.observe_request(op, "ok", 0.0001)
    for outcome in ("INVALID_ARGUMENT", "PERMISSION_DENIED", "BUSY", "INVALID_STATE"):
        m.observe_request("system.standby", outcome, 0.0001)
    for accept in ("text/plain", "application/openmetrics-text;version=1.0.0"):
        encoder, content_type = choose_encoder(accept)
        best = min(timeit.repeat(lambda: encoder(m.registry), number=20, repeat=5)) / 20
        print(f"  render {content_type.split(';')[0]:30s} {best * 1e3:6.2f} ms, {len(encoder(m.registry)):,} bytes")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=4.0, help="per measurement (latency, then throughput)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--micro", action="store_true", help="only the in-process cost of each loop-side call")
    a = p.parse_args()
    micro()
    if a.micro:
        return
    configs = a.configs.split(",")
    results = {c: {"latencies": [], "rates": [], "cpu": [], "scrapes": []} for c in configs}
    for r in range(a.rounds):
        for config in configs:
            got = measure(config, a.seconds)
            results[config]["latencies"] += got["latencies"]
            results[config]["rates"].append(got["rate"])
            results[config]["cpu"].append(got["cpu_us"])
            results[config]["scrapes"].append(got["scrapes_per_s"])
            print(f"round {r + 1} {config:10s} p50 {statistics.median(got['latencies']):6.1f} µs  "
                  f"{got['rate']:7.0f} req/s  csd CPU {got['cpu_us']:5.1f} µs/req  scrapes {got['scrapes_per_s']:6.1f}/s", flush=True)
    print(f"\n{'config':10s} {'p50 µs':>7s} {'p99 µs':>7s} {'req/s, 16 in flight':>22s} "
          f"{'csd CPU µs/req':>19s} {'scrapes/s':>9s}   (medians over rounds; ranges)")
    for config in configs:
        q = statistics.quantiles(results[config]["latencies"], n=100)
        rates, cpu = results[config]["rates"], results[config]["cpu"]
        print(f"{config:10s} {q[49]:7.1f} {q[98]:7.1f} {statistics.median(rates):7.0f} ({min(rates):.0f}–{max(rates):.0f}) "
              f"{statistics.median(cpu):6.1f} ({min(cpu):.1f}–{max(cpu):.1f}) "
              f"{statistics.median(results[config]['scrapes']):9.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        sys.exit(serve(sys.argv[2:]))
    main()
