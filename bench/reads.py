"""Reads: `system.show` req/s at 1, 16 and 64 clients against the ZeroMQ limit, circus and
supervisor; csd's CPU per read (16 clients); the 1-client round trip p50/p99.

How: five servers run side by side for the whole figure — csd (installed wheel, CURVE, its real
keys), the bare pyzmq ROUTER echo with CURVE and without (csd's socket options, echo_server.py),
circusd (`status` on its ZeroMQ control endpoint) and supervisord (XML-RPC
`supervisor.getProcessInfo` over keep-alive HTTP). Each repetition loads every contender in
turn at each client count (the order rotates between repetitions), with closed-loop clients in
separate processes (load.py), for `duration` s after `warmup` s of the same load; a round in
which other users took CPU is measured again (suite.rounds). Ratios pair csd with the echo
measured in the same round; the table gives their median (min..max) over the repetitions.
Server CPU per request comes from /proc/PID/stat over the same window (all threads; "Python"
is the main thread, the rest is libzmq's I/O thread doing CURVE); latencies from the clients.
"""

from __future__ import annotations

import load
from contenders import Circus, Csd, Echo, Supervisor
from stats import busiest, ratios, row, summary, target

NAME = "reads"
LIMIT = "echo+CURVE"


def run(bench) -> tuple[list[dict], dict]:
    csd = Csd(bench)
    servers = [csd, Echo(bench, curve=True), Echo(bench, curve=False), Circus(bench), Supervisor(bench)]
    try:
        for server in servers:
            server.start()
        clients = bench.settings.clients
        raw: dict[str, list[dict]] = {f"{s.name}@{n}": [] for s in servers for n in clients}
        for rep in range(bench.reps):
            order = servers[rep % len(servers):] + servers[:rep % len(servers)]
            for n in clients:
                steps = [(s.name, lambda s=s, n=n: load.run(bench, s.target(), n, bench.duration,
                                                            record_latency=(n == 1))) for s in order]
                for name, result in bench.rounds(f"rep {rep + 1}, {n} clients", steps).items():
                    raw[f"{name}@{n}"].append(result)
                    bench.say(f"  rep {rep + 1} {name:<12} {n:>2} clients: {result['rate']:8,.0f} req/s"
                              f"  cpu {result['cpu_us']:5.1f} µs/req  load {result['load1']}"
                              f"  others {result['others_cpus']}")
    finally:
        for server in servers:
            server.stop()
    return rows(raw, clients, [s.name for s in servers]), {"runs": raw}


def _values(raw, key, field):
    return [r.get(field) for r in raw[key]]


def _busy(raw, *keys):
    return busiest(*(_values(raw, key, "others_cpus") for key in keys))


def rows(raw: dict, clients, names: list[str]) -> list[dict]:
    out = []
    others = [n for n in names if n not in ("csd", LIMIT)]
    for n in clients:
        csd_rates, limit_rates = _values(raw, f"csd@{n}", "rate"), _values(raw, f"{LIMIT}@{n}", "rate")
        out.append(row(
            f"show_{n}", f"`system.show` req/s, {n} client{'s' if n > 1 else ''}",
            summary(csd_rates, "req/s"), summary(limit_rates, "req/s"), LIMIT, ratios(csd_rates, limit_rates),
            target(">=", 0.5, "≥ 0.5× echo+CURVE") if n == 16 else None,
            others={name: {"value": summary(_values(raw, f"{name}@{n}", "rate"), "req/s"),
                           "csd_ratio": ratios(csd_rates, _values(raw, f"{name}@{n}", "rate"))} for name in others},
            load=_values(raw, f"csd@{n}", "load1"), busy=_busy(raw, f"csd@{n}", f"{LIMIT}@{n}"),
        ))
    if 16 in clients and 64 in clients:
        at16, at64 = _values(raw, "csd@16", "rate"), _values(raw, "csd@64", "rate")
        out.append(row(
            "show_64_vs_16", "`system.show` at 64 clients vs 16 (not falling)", summary(at64, "req/s"),
            summary(at16, "req/s"), "csd at 16 clients", ratios(at64, at16),
            target(">=", 0.95, "≥ 0.95× (flat within noise)"), load=_values(raw, "csd@64", "load1"),
            busy=_busy(raw, "csd@64", "csd@16"),
            note="ratio of csd's own rates measured in the same repetition",
        ))
    if 16 in clients:
        cpu, limit_cpu = _values(raw, "csd@16", "cpu_us"), _values(raw, f"{LIMIT}@16", "cpu_us")
        out.append(row(
            "cpu_per_read", "server CPU per read, 16 clients", summary(cpu, "µs"), summary(limit_cpu, "µs"), LIMIT,
            ratios(cpu, limit_cpu),
            others={"csd Python thread": {"value": summary(_values(raw, "csd@16", "cpu_main_us"), "µs")},
                    f"{LIMIT} Python thread": {"value": summary(_values(raw, f"{LIMIT}@16", "cpu_main_us"), "µs")},
                    **{f"{name}": {"value": summary(_values(raw, f"{name}@16", "cpu_us"), "µs")} for name in others}},
            load=_values(raw, "csd@16", "load1"), busy=_busy(raw, "csd@16", f"{LIMIT}@16"),
            note="/proc/PID/stat of the server over the measured window, divided by the replies in it",
        ))
    if 1 in clients:
        for q, goal in (("p50", target("<=", 1.3, "≤ 1.3× echo+CURVE")), ("p99", None)):
            mine, limit = _values(raw, "csd@1", f"{q}_us"), _values(raw, f"{LIMIT}@1", f"{q}_us")
            out.append(row(
                f"rtt_{q}", f"round trip {q}, 1 client", summary(mine, "µs"), summary(limit, "µs"), LIMIT,
                ratios(mine, limit), goal, load=_values(raw, "csd@1", "load1"), busy=_busy(raw, "csd@1", f"{LIMIT}@1"),
                others={name: {"value": summary(_values(raw, f"{name}@1", f"{q}_us"), "µs")} for name in others},
            ))
    return out
