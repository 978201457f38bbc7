"""Admin latency while a viewer floods csd with denied requests (issue 10: "a denial flood
leaves admin p99 latency within 2x of idle").

Run by hand: `python bench/denial_flood.py [--csd-source DIR] [--seconds S] [--rounds R]
[--sockets N --in-flight K]`. Starts csd from this checkout (or from DIR, e.g. an older commit
unpacked with `git archive`), with an admin and a viewer key, then measures the admin's round
trips, one at a time:
  - reads (`system.show`) and durable changes (`config.execmode.setup`, toggled in STANDBY,
    each an fsync'd commit),
  - idle, and while a separate process floods csd with `system.standby` from the viewer key
    (K requests in flight on each of N sockets, as fast as csd answers: all denied), alternately,
    R rounds of S seconds each (the machine is shared: alternating evens out its load).
Prints p50/p99/max per phase, the flood's rate, and the audit rows the flood left.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import zmq  # noqa: E402

from csadmin.shared import protocol  # noqa: E402
from csadmin.client import Client  # noqa: E402
from csadmin.shared.keyfile import read_key_file  # noqa: E402


def start_csd(source: str, tmp: str, daemon: list[str] | None = None, env: dict | None = None):
    """csd from `source` on ipc sockets in `tmp`, with an admin and a viewer key; returns once it
    answers. `daemon`: the command that runs csd (default `python -m daemon`); `env`: more
    environment for it."""
    state = os.path.join(tmp, "state")
    env = dict(os.environ, PYTHONPATH=source, **(env or {}))
    run = daemon or [sys.executable, "-m", "csadmin.daemon"]
    admin, viewer = os.path.join(tmp, "admin.key_secret"), os.path.join(tmp, "viewer.key_secret")
    subprocess.run(run + ["keys", "init", "--state-dir", state, "--out", admin], check=True, env=env,
                   stdout=subprocess.DEVNULL, cwd=source)
    subprocess.run(run + ["keys", "add", "viewer", "--role", "viewer", "--state-dir", state, "--out", viewer],
                   check=True, env=env, stdout=subprocess.DEVNULL, cwd=source)
    proc = subprocess.Popen(
        (daemon or run) + ["--state-dir", state, "--endpoint", f"ipc://{tmp}/csd.sock", "--events-endpoint",
               f"ipc://{tmp}/ev.sock", "--connection-file", f"{tmp}/csd.json", "--log-level", "warning",
               "--config", os.devnull, "--standby-seconds", "0", "--activate-seconds", "0"],
        env=env, stdout=open(os.path.join(tmp, "csd.log"), "wb"), stderr=subprocess.STDOUT, cwd=source,
    )
    deadline = time.monotonic() + 20
    while True:
        try:
            with Client(connect=f"{tmp}/csd.json", key=admin, timeout=0.5, retries=0) as c:
                c.hello()
            return proc, admin, viewer
        except Exception:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise SystemExit(f"csd did not start: see {tmp}/csd.log")
            time.sleep(0.05)


def dealer(ctx, connection_file: str, key: str):
    """A raw CURVE DEALER socket connected to the csd of `connection_file`, with `key`."""
    with open(connection_file) as f:
        info = json.load(f)
    public, secret = read_key_file(key)
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.CURVE_SERVERKEY, info["server_key"].encode())
    s.setsockopt(zmq.CURVE_PUBLICKEY, public.encode())
    s.setsockopt(zmq.CURVE_SECRETKEY, secret.encode())
    s.connect(info["endpoint"])
    return s


def flood(connection_file: str, key: str, stop, counter, sockets: int, in_flight: int) -> None:
    ctx = zmq.Context()
    socks = [dealer(ctx, connection_file, key) for _ in range(sockets)]
    poller = zmq.Poller()
    n = 0
    for s in socks:
        poller.register(s, zmq.POLLIN)
        for _ in range(in_flight):
            n += 1
            s.send(protocol.request(f"f{n}", "system.standby"))
    done = 0
    while not stop.is_set():
        for s, _ in poller.poll(100):
            while s.poll(0, zmq.POLLIN):
                s.recv()
                done += 1
                n += 1
                s.send(protocol.request(f"f{n}", "system.standby"))
    counter.value += done
    for s in socks:
        s.close(0)
    ctx.term()


def measure(client: Client, seconds: float) -> dict:
    reads, writes = [], []
    modes = ["WEIGHT_STREAMING", "PIPELINED"]
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        t0 = time.perf_counter()
        client.system_show()
        reads.append((time.perf_counter() - t0) * 1000)
        if i % 10 == 0:
            t0 = time.perf_counter()
            client.execmode_setup(modes[(i // 10) % 2])
            writes.append((time.perf_counter() - t0) * 1000)
        i += 1
    return {"read": reads, "write": writes}


def stats(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return f"p50 {q[49]:6.2f} ms  p99 {q[98]:6.2f} ms  max {max(samples):7.2f} ms  (n={len(samples)})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--csd-source", default=ROOT, help="the checkout csd runs from (default: this one)")
    p.add_argument("--seconds", type=float, default=5.0, help="per phase and round")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--sockets", type=int, default=1, help="flooding sockets")
    p.add_argument("--in-flight", type=int, default=1, help="requests in flight per flooding socket")
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="csd-flood-")
    proc, admin, viewer = start_csd(os.path.abspath(a.csd_source), tmp)
    idle, flooded = {"read": [], "write": []}, {"read": [], "write": []}
    counter = multiprocessing.Value("q", 0)
    try:
        with Client(connect=f"{tmp}/csd.json", key=admin, timeout=30) as c:
            c.system_standby()
            c.wait_for(state="STANDBY", timeout=10)
            audit_before, writes = len(c.audit_show(max_count=10**9)), 0
            for _ in range(a.rounds):
                for name, samples in measure(c, a.seconds).items():
                    idle[name] += samples
                stop = multiprocessing.Event()
                flooder = multiprocessing.Process(
                    target=flood, args=(f"{tmp}/csd.json", viewer, stop, counter, a.sockets, a.in_flight))
                flooder.start()
                time.sleep(0.5)  # the flood at full speed before measuring
                for name, samples in measure(c, a.seconds).items():
                    flooded[name] += samples
                stop.set()
                flooder.join()
            writes = len(idle["write"]) + len(flooded["write"])
            denied_rows = len(c.audit_show(max_count=10**9)) - audit_before - writes
    finally:
        proc.terminate()
        proc.wait()
    rate = counter.value / ((a.seconds + 0.5) * a.rounds)
    print(f"csd from {a.csd_source}; flood: {a.sockets} socket(s) x {a.in_flight} in flight")
    for name in ("read", "write"):
        print(f"  admin {name:5s} idle   {stats(idle[name])}")
        print(f"  admin {name:5s} flood  {stats(flooded[name])}")
        ratio = statistics.quantiles(flooded[name], n=100)[98] / statistics.quantiles(idle[name], n=100)[98]
        print(f"  admin {name:5s} p99 flood/idle: {ratio:.2f}x")
    print(f"  flood: {counter.value} denied requests ({rate:.0f}/s); audit rows they left: {denied_rows}")


if __name__ == "__main__":
    main()
