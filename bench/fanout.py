"""Event fan-out: time from a state change request to its event reaching the last of 100
subscribers (p99 and p50 over the changes), csd against the PUB+CURVE limit.

How: 100 CURVE SUB sockets in 4 processes (subscriber.py), subscribed to `EventSetExecMode`.
csd sits in STANDBY and an admin client (a raw CURVE DEALER) toggles the execution mode; the
limit is echo_server.py with a PUB socket: each request publishes one event of the same size
and is answered (no work, no disk). Warm-up changes go out until every subscriber has an event
(PUB/SUB joins asynchronously); then `changes` changes, one every 15 ms, each timed from just
before its request is sent to the last subscriber's receipt (CLOCK_MONOTONIC, shared by the
processes). Events are matched to changes by their order of `seq`; a subscriber that misses
one is reported and left out. Each repetition measures both, in alternating order, as one round
(measured again if other users took CPU meanwhile: suite.rounds).
"""

from __future__ import annotations

import json
import selectors
import time

import zmq

from contenders import Csd, Echo
from stats import busiest, percentile, ratios, row, summary, target

NAME = "fanout"
SUBSCRIBERS, PROCESSES = 100, 4
SPACING_S = 0.015
PREFIX = "EventSetExecMode"


class Mutator:
    """The client that makes changes: one DEALER, one request outstanding."""

    def __init__(self, endpoint: str, curve: dict, frames):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        for opt, key in ((zmq.CURVE_SERVERKEY, "server_key"), (zmq.CURVE_PUBLICKEY, "public_key"),
                         (zmq.CURVE_SECRETKEY, "secret_key")):
            self.sock.setsockopt(opt, curve[key].encode())
        self.sock.connect(endpoint)
        self.frames = frames
        self.n = 0

    def change(self) -> int:
        """Make one change; return when it was sent (ns)."""
        self.n += 1
        frame = self.frames(self.n)
        at = time.monotonic_ns()
        self.sock.send(frame)
        if not self.sock.poll(30_000):
            raise RuntimeError("no reply to a change within 30 s")
        reply = self.sock.recv()
        if b'"ok":false' in reply:
            raise RuntimeError(f"the change was refused: {reply[:300]!r}")
        return at

    def close(self) -> None:
        self.sock.close(0)
        self.ctx.term()


def csd_frames(n: int) -> bytes:
    mode = "WEIGHT_STREAMING" if n % 2 else "PIPELINED"
    return json.dumps({"v": 1, "id": f"fan{n}", "op": "config.execmode.setup", "args": {"mode": mode}}).encode()


def measure(bench, endpoint: str, sub_curve: dict, mutator: Mutator, changes: int) -> dict:
    procs = []
    per = SUBSCRIBERS // PROCESSES
    try:
        for _ in range(PROCESSES):
            procs.append(bench.spawn_client(
                "subscriber.py", {"endpoint": endpoint, "curve": sub_curve, "count": per, "prefix": PREFIX}))
        for p in procs:
            assert json.loads(p.stdout.readline())["ready"]
        # Warm up until every subscriber has seen an event.
        sel = selectors.DefaultSelector()
        for p in procs:
            sel.register(p.stdout, selectors.EVENT_READ)
        joined, deadline = 0, time.monotonic() + 60
        while joined < len(procs):
            if time.monotonic() > deadline:
                raise RuntimeError("subscribers did not all receive an event within 60 s")
            mutator.change()
            for key, _ in sel.select(0.05):
                if json.loads(key.fileobj.readline()).get("joined"):
                    joined += 1
                    sel.unregister(key.fileobj)
        time.sleep(0.2)
        start, meter = time.monotonic_ns(), bench.meter()
        load1 = float(open("/proc/loadavg").read().split()[0])
        sent = []
        for _ in range(changes):
            at = mutator.change()
            sent.append(at)
            left = at / 1e9 + SPACING_S - time.monotonic()
            if left > 0:
                time.sleep(left)
        others = meter.read()
        time.sleep(0.3)
        received = []
        for p in procs:
            p.stdin.write("stop\n")
            p.stdin.flush()
            received += json.loads(p.stdout.readline())["events"]
    finally:
        bench.reap(procs, timeout=10)
    last = [0] * changes
    complete, all_deliveries = 0, []
    for events in received:
        mine = sorted(e for e in events if e[1] >= start)
        if len(mine) != changes:
            continue
        complete += 1
        for k, (_, at) in enumerate(mine):
            last[k] = max(last[k], at - sent[k])
            all_deliveries.append(at - sent[k])
    if not complete:
        raise RuntimeError("no subscriber received every event")
    last_us = sorted(x / 1000 for x in last)
    every = sorted(x / 1000 for x in all_deliveries)
    return {"p50_us": percentile(last_us, 50), "p99_us": percentile(last_us, 99), "max_us": last_us[-1],
            "delivery_p50_us": percentile(every, 50), "complete_subscribers": complete, "load1": load1,
            "others_cpus": others}


def run(bench) -> tuple[list[dict], dict]:
    changes = bench.settings.changes
    csd, pub = Csd(bench), Echo(bench, curve=True, pub=True)
    raw: dict[str, list[dict]] = {"csd": [], "pub+CURVE": []}
    mutators = []
    try:
        csd.start()
        csd.standby()
        pub.start()
        contenders = {
            "csd": (csd.events_endpoint, csd.curve("viewer"),
                    Mutator(csd.endpoint, csd.curve("admin"), csd_frames)),
            "pub+CURVE": (pub.pub_endpoint, pub.curve(),
                          Mutator(pub.endpoint, pub.curve(), lambda n: b'{"op":"change","id":"%d"}' % n)),
        }
        mutators = [c[2] for c in contenders.values()]
        names = list(contenders)
        def step(name):
            return lambda: measure(bench, *contenders[name], changes)

        for rep in range(bench.reps):
            order = names[rep % 2:] + names[:rep % 2]
            with bench.pinning.this_process_as_client():  # the mutator is a client too
                results = bench.rounds(f"rep {rep + 1}", [(n, step(n)) for n in order])
            for name, result in results.items():
                raw[name].append(result)
                bench.say(f"  rep {rep + 1} {name:<10} change → last of {SUBSCRIBERS} subscribers: "
                          f"p50 {result['p50_us'] / 1000:.2f} ms, p99 {result['p99_us'] / 1000:.2f} ms "
                          f"({result['complete_subscribers']} complete)  load {result['load1']}"
                          f"  others {result['others_cpus']}")
    finally:
        for m in mutators:
            m.close()
        csd.stop()
        pub.stop()
    return rows(raw), {"runs": raw}


def rows(raw: dict) -> list[dict]:
    def ms(name, field):
        return [r[field] / 1000 for r in raw[name]]

    out = []
    for q, goal in (("p99", target("<=", 1.5, "≤ 1.5× PUB+CURVE")), ("p50", None)):
        out.append(row(
            f"fanout_{q}", f"event fan-out to {SUBSCRIBERS} subscribers, change → last subscriber {q}",
            summary(ms("csd", f"{q}_us"), "ms"), summary(ms("pub+CURVE", f"{q}_us"), "ms"), "PUB+CURVE limit",
            ratios(ms("csd", f"{q}_us"), ms("pub+CURVE", f"{q}_us")), goal, load=[r["load1"] for r in raw["csd"]],
            busy=busiest(*([r["others_cpus"] for r in raw[name]] for name in raw)),
            others={"subscribers missing an event (csd)": {
                "value": summary([SUBSCRIBERS - r["complete_subscribers"] for r in raw["csd"]])}} if q == "p99" else {},
        ))
    return out
