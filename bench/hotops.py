"""Hot ops: `run.stream` and `run.heartbeat` req/s against `system.show` from the same client,
and (for issue #15) the aggregate `run.stream` rate of 16 concurrent streamers against 1.

How: a fresh csd, ACTIVE; a runtime client (operator key) opens a run admitting 16 input
workers and programs its fabric (size 0: programmed at once). Each repetition measures, in
rotated order, one client doing system.show, run.stream (1 sample per call) and run.heartbeat
(a sibling of the opener's client: same key, same 16-character identity prefix, its own route),
and 16 input workers doing run.stream, each for `duration` s; ratios pair figures of the same
round (measured again if other users took CPU meanwhile: suite.rounds).

`streamers()` makes the 16 workers as a runtime's would be (issue #15): a key each
(`csd keys add bench-worker-N --role operator`), each joining the run with its join token from
its own identity; load.run then streams from sockets with those identities and keys, which csd
knows as those workers (a key name and the first 16 characters of an identity).
"""

from __future__ import annotations

import os

import load
from contenders import Csd
from stats import busiest, ratios, row, summary, target

NAME = "hotops"
PROGRAM = {"fingerprint": "sha256:bench", "mode": "train", "compile_time": 1.0, "est_samples_per_sec": 1e9,
           "size_bytes": 0}


def open_programmed_run(csd: Csd, workers: int = 0):
    """A runtime's client with an open, programmed run admitting `workers` input workers (no
    heartbeat thread: streaming renews the lease). Returns (client, run)."""
    client = csd.client("runtime")
    snap = client.system_show()
    run = client.open_run(mode="train", owner="bench", lease_seconds=3600, heartbeat=False, workers=workers or None)
    run.program(dict(PROGRAM, target_system=snap["serial"], execmode=snap["activeExecmode"]))
    return client, run


def siblings(csd: Csd, client, n: int) -> tuple[list[str], list[dict]]:
    """The socket identities and CURVE keys of `n` siblings of the opener's client (csd takes
    them for the opener)."""
    identities = [client.sibling().session for _ in range(n)]
    return identities, [csd.curve("runtime")] * n


def streamers(csd: Csd, run, n: int) -> tuple[list[str], list[dict]]:
    """The socket identities and CURVE keys of `n` input workers joined to `run`, each with its
    own operator key. Each joins from a client it then closes, so the load generator's socket
    takes over its identity."""
    identities, curves = [], []
    for i in range(n):
        name = f"bench-worker-{i + 1}"
        if name not in csd.key_files:
            csd.key_files[name] = os.path.join(csd.dir, f"{name}.key_secret")
            csd._csd("keys", "add", name, "--role", "operator", "--state-dir", csd.state_dir,
                     "--out", csd.key_files[name])
        identity = os.urandom(16).hex().encode()
        with csd.client(name, identity=identity) as worker:
            worker.join_run(run.id, run.join_token, name=name, heartbeat=False)
        identities.append(identity.decode())
        curves.append(csd.curve(name))
    return identities, curves
def run(bench) -> tuple[list[dict], dict]:
    csd = Csd(bench)
    raw: dict[str, list[dict]] = {"show": [], "stream": [], "heartbeat": [], "stream16": []}
    try:
        csd.start()
        client, r = open_programmed_run(csd, workers=16)
        one = siblings(csd, client, 1)
        many = streamers(csd, r, 16)
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
        ratios(rates("stream16"), rates("stream")), target(">=", 1.0, "≥ 1× one client (issue #15)"),
        load=[r["load1"] for r in raw["stream16"]],
        busy=busy("stream16", "stream"),
        note="16 input workers, each with its own operator key, joined to the run with its token "
             "(issue #15), against the opener's own client",
    ))
    return out
