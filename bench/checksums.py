"""What the row checksums cost (issue 24): the durable-change rate of csd before and after, in one run.

    .venv/bin/python bench/checksums.py                 # before = the merge base with main
    .venv/bin/python bench/checksums.py --base 2700612 --reps 7 --duration 8

"Before" is csd from `git archive BASE` (default: `git merge-base HEAD main`, csd without
checksums, numbered commits and csd.progress), "after" is this checkout's working tree; both
run from source with this venv's Python and dependencies (csadmin/daemon links to daemon/, so
a source tree on PYTHONPATH is the whole package), with their state dirs side by side in one
temp dir (the same disk). Each is started fresh, with real keys (`csd keys init`), put in
STANDBY, and then one admin client toggles the execution mode (`config.execmode.setup`, a
durable, audited change whose reply is stored; the reply comes after the fsync'd commit) as
fast as it can: the rate of acknowledged changes. Two csds run at once, idle but for the one
measured. On a shared machine the load moves within seconds, so each repetition interleaves
them finely: SLICE-second turns, before and after alternating (the order flipping each
repetition), until each has had DURATION seconds; both thus see the same load. Also csd's CPU
per change (utime+stime of the csd process from /proc over its turns), which load disturbs
far less than the rate. The client is a raw CURVE DEALER (one request outstanding), so csd's
cost is not diluted by a client library. Prints a table and the median after/before ratios;
the figures go into bench/RESULTS.md by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import zmq

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MODES = ("WEIGHT_STREAMING", "PIPELINED")


class Csd:
    def __init__(self, name: str, tree: str, work: str):
        self.name, self.tree = name, tree
        self.dir = os.path.join(work, name)
        os.makedirs(self.dir)
        self.state = os.path.join(self.dir, "state")
        self.env = {**os.environ, "PYTHONPATH": tree}
        self.key = os.path.join(self.dir, "admin.key_secret")
        self._csd("keys", "init", "--state-dir", self.state, "--admin-name", "bench-admin", "--out", self.key)
        self.conn = os.path.join(self.dir, "csd.json")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "csadmin.daemon", "--config", os.devnull, "--state-dir", self.state,
             "--endpoint", f"ipc://{self.dir}/csd.sock", "--events-endpoint", f"ipc://{self.dir}/ev.sock",
             "--connection-file", self.conn, "--activate-seconds", "0", "--standby-seconds", "0",
             "--log-level", "warning"], env=self.env, cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.conn):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{name}: csd did not start")
            time.sleep(0.05)
        self.n = 0
        self.sock = self._socket()
        self.call("system.standby")
        while self.call("system.show")["state"] != "STANDBY":
            time.sleep(0.05)

    def _csd(self, *args: str) -> None:
        subprocess.run([sys.executable, "-m", "csadmin.daemon", *args], env=self.env, check=True,
                       stdout=subprocess.DEVNULL)

    def _socket(self):
        from csadmin.shared.keyfile import read_key_file

        with open(self.conn) as f:
            conn = json.load(f)
        public, secret = read_key_file(self.key)
        sock = zmq.Context.instance().socket(zmq.DEALER)
        sock.setsockopt(zmq.CURVE_SERVERKEY, conn["server_key"].encode())
        sock.setsockopt(zmq.CURVE_PUBLICKEY, public.encode())
        sock.setsockopt(zmq.CURVE_SECRETKEY, secret.encode())
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(conn["endpoint"])
        return sock

    def call(self, op: str, **args) -> dict:
        self.n += 1
        self.sock.send(json.dumps({"v": 1, "id": f"b{self.n}", "op": op, "args": args}).encode())
        if not self.sock.poll(30_000):
            raise SystemExit(f"{self.name}: no reply to {op}")
        reply = json.loads(self.sock.recv())
        if not reply.get("ok"):
            raise SystemExit(f"{self.name}: {op} refused: {reply}")
        return reply["result"]

    def toggles(self, seconds: float) -> int:
        """Acknowledged mode changes in `seconds` (one request outstanding)."""
        count, end = 0, time.monotonic() + seconds
        sock, head = self.sock, b'{"v":1,"id":"t'
        while time.monotonic() < end:
            self.n += 1
            mode = MODES[self.n % 2]
            sock.send(head + str(self.n).encode() +
                      f'","op":"config.execmode.setup","args":{{"mode":"{mode}"}}}}'.encode())
            reply = sock.recv()
            if b'"ok":true' not in reply and b'"ok": true' not in reply:
                raise SystemExit(f"{self.name}: refused: {reply[:200]!r}")
            count += 1
        return count

    def cpu_seconds(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.sock.close(0)
        self.proc.terminate()
        self.proc.wait(timeout=20)


def others_busy(seconds: float) -> float:
    """CPUs kept busy on the machine over `seconds` (everything, this run included)."""
    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]
    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return round(((total1 - total0) - (idle1 - idle0)) / max(1, total1 - total0) * os.cpu_count(), 2)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--base", help="git ref of 'before' (default: git merge-base HEAD main)")
    p.add_argument("--after", default=ROOT, help="source tree of 'after' (default: this working tree)")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--duration", type=float, default=6.0, help="seconds measured per csd per repetition")
    p.add_argument("--slice", type=float, default=0.5, help="seconds per turn")
    p.add_argument("--warmup", type=float, default=1.0)
    a = p.parse_args()
    base = a.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True,
                                    check=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="csbench-checksums-")
    before_tree = os.path.join(work, "before-src")
    os.makedirs(before_tree)
    archive = subprocess.run(["git", "archive", base], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", before_tree], input=archive, check=True)
    csds = {"before": Csd("before", before_tree, work), "after": Csd("after", a.after, work)}
    rates: dict[str, list[float]] = {"before": [], "after": []}
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    print(f"before = {base[:12]} (git archive), after = {a.after}; {a.reps} reps of "
          f"{a.duration} s each, in {a.slice} s turns")
    try:
        for c in csds.values():
            c.toggles(a.warmup)
        for rep in range(a.reps):
            order = ["before", "after"] if rep % 2 == 0 else ["after", "before"]
            count, seconds, used = dict.fromkeys(order, 0), dict.fromkeys(order, 0.0), dict.fromkeys(order, 0.0)
            load0 = os.getloadavg()[0]
            while min(seconds.values()) < a.duration:
                for name in order:
                    c = csds[name]
                    cpu0, t0 = c.cpu_seconds(), time.monotonic()
                    count[name] += c.toggles(a.slice)
                    seconds[name] += time.monotonic() - t0
                    used[name] += c.cpu_seconds() - cpu0
            for name in order:
                rates[name].append(count[name] / seconds[name])
                cpu[name].append(used[name] / count[name] * 1e6)
            print(f"  rep {rep + 1}: before {rates['before'][-1]:7.1f}/s {cpu['before'][-1]:6.0f} µs CPU each | "
                  f"after {rates['after'][-1]:7.1f}/s {cpu['after'][-1]:6.0f} µs CPU each | load1 {load0:.2f}, "
                  f"machine {others_busy(0.5)} CPUs busy")
    finally:
        for c in csds.values():
            c.stop()
    rate_ratios = [af / bf for bf, af in zip(rates["before"], rates["after"])]
    cpu_ratios = [af / bf for bf, af in zip(cpu["before"], cpu["after"])]
    for name in ("before", "after"):
        print(f"{name:<6}: {statistics.median(rates[name]):7.1f} changes/s (median; {min(rates[name]):.1f}.."
              f"{max(rates[name]):.1f}), csd CPU {statistics.median(cpu[name]):.0f} µs per change")
    print(f"rate after/before per rep: {', '.join(f'{r:.3f}' for r in rate_ratios)}; "
          f"median {statistics.median(rate_ratios):.3f} (target >= 0.95)")
    print(f"CPU per change after/before per rep: {', '.join(f'{r:.3f}' for r in cpu_ratios)}; "
          f"median {statistics.median(cpu_ratios):.3f}")


if __name__ == "__main__":
    main()
