"""Hot ops: `run.stream` and `run.heartbeat` req/s against `system.show` from the same client,
and (for issue #15) the aggregate `run.stream` rate of 16 concurrent streamers against 1.

How: a fresh csd, ACTIVE; a runtime client (operator key) opens a run and programs its fabric
(size 0: programmed at once). Today a run belongs to the client that opened it, so every
streaming socket is a sibling of the opener's client (`Client.sibling()`: same key, same
16-character identity prefix, its own route). Each repetition measures, in rotated order, one
sibling doing system.show, run.stream (1 sample per call) and run.heartbeat, and 16 siblings
doing run.stream, each for `duration` s; ratios pair figures of the same round (measured again
if other users took CPU meanwhile: suite.rounds).

Hook for "16 workers": `streamers()` makes the 16 streaming clients. Once a run can be joined
by other clients (issue #15), make it return those workers instead of the opener's siblings:
register a key per worker (`csd keys add worker-N --role operator --state-dir …`), have each
worker's `Client` join the run, and return their sessions and CURVE keys — load.run gives every
client its own identity and key, and csd knows a client by its key name and the first 16
characters of its identity, so the load generator's sockets stream as those workers.
"""

from __future__ import annotations

import load
from contenders import Csd
from stats import busiest, ratios, row, summary, target

NAME = "hotops"
PROGRAM = {"fingerprint": "sha256:bench", "mode": "train", "compile_time": 1.0, "est_samples_per_sec": 1e9,
           "size_bytes": 0}


def open_programmed_run(csd: Csd):
    """A runtime's client with an open, programmed run (no heartbeat thread: streaming renews
    the lease). Returns (client, run)."""
    client = csd.client("runtime")
    snap = client.system_show()
    run = client.open_run(mode="train", owner="bench", lease_seconds=3600, heartbeat=False)
    run.program(dict(PROGRAM, target_system=snap["serial"], execmode=snap["activeExecmode"]))
    return client, run


def streamers(csd: Csd, client, n: int) -> tuple[list[str], list[dict]]:
    """The socket identities and CURVE keys of `n` clients that may stream into `client`'s run.
    Today: siblings of the opener's client (the only ones csd lets touch its run)."""
    identities = [client.sibling().session for _ in range(n)]
    return identities, [csd.curve("runtime")] * n


def run(bench) -> tuple[list[dict], dict]:
    csd = Csd(bench)
    raw: dict[str, list[dict]] = {"show": [], "stream": [], "heartbeat": [], "stream16": []}
    try:
        csd.start()
        client, r = open_programmed_run(csd)
        one = streamers(csd, client, 1)
        many = streamers(csd, client, 16)
        loads = {
            "show": (csd.target("system.show"), one),
            "stream": (csd.target("run.stream", [{"run_id": r.id, "samples": 1}]), one),
            "heartbeat": (csd.target("run.heartbeat", [{"run_id": r.id}]), one),
            "stream16": (csd.target("run.stream", [{"run_id": r.id, "samples": 1}]), many),
        }
        def step(name):
            tgt, (ids, curves) = loads[name]
            return lambda: load.run(bench, tgt, len(ids), bench.duration, identities=ids, curves=curves)

        names = list(loads)
        for rep in range(bench.reps):
            order = names[rep % len(names):] + names[:rep % len(names)]
            for name, result in bench.rounds(f"rep {rep + 1}", [(n, step(n)) for n in order]).items():
                raw[name].append(result)
                bench.say(f"  rep {rep + 1} {name:<10} {result['rate']:8,.0f} req/s  "
                          f"cpu {result['cpu_us']:5.1f} µs/req  load {result['load1']}  others {result['others_cpus']}")
        client.close()
    finally:
        csd.stop()
    return rows(raw), {"runs": raw}


def rows(raw: dict) -> list[dict]:
    def rates(name):
        return [r["rate"] for r in raw[name]]

    def cpu(name):
        return summary([r["cpu_us"] for r in raw[name]], "µs")

    def busy(*names):
        return busiest(*([r["others_cpus"] for r in raw[name]] for name in names))

    out = []
    for op in ("stream", "heartbeat"):
        out.append(row(
            f"hot_{op}", f"`run.{op}` req/s (the hot op), 1 client", summary(rates(op), "req/s"),
            summary(rates("show"), "req/s"), "`system.show`, same client", ratios(rates(op), rates("show")),
            target(">=", 1.5, "≥ 1.5× `system.show`"), load=[r["load1"] for r in raw[op]], busy=busy(op, "show"),
            others={f"csd CPU per run.{op}": {"value": cpu(op)}, "per system.show": {"value": cpu("show")}},
        ))
    out.append(row(
        "stream_16_vs_1", "aggregate `run.stream` req/s, 16 concurrent streamers vs 1 (issue #15)",
        summary(rates("stream16"), "req/s"), summary(rates("stream"), "req/s"), "1 streamer",
        ratios(rates("stream16"), rates("stream")), load=[r["load1"] for r in raw["stream16"]],
        busy=busy("stream16", "stream"),
        note="today 16 sibling sockets of the opener's client (a run belongs to one client); "
             "hotops.streamers() is the hook for 16 workers",
    ))
    return out
