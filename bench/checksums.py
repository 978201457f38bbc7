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
fast as it can for DURATION seconds after a warm-up: the rate of acknowledged changes. Two
csds run at once, idle but for the one measured; each repetition measures both, the order
alternating. The client is a raw CURVE DEALER (one request outstanding), so csd's cost is not
diluted by a client library. Prints a table and the median after/before ratio; the figures
go into bench/RESULTS.md by hand.
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
        from csadmin.keyfile import read_key_file

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
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--duration", type=float, default=6.0)
    p.add_argument("--warmup", type=float, default=1.0)
    a = p.parse_args()
    base = a.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True,
                                    check=True).stdout.strip()
    work = tempfile.mkdtemp(prefix="csbench-checksums-")
    before_tree = os.path.join(work, "before-src")
    os.makedirs(before_tree)
    archive = subprocess.run(["git", "archive", base], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", before_tree], input=archive, check=True)
    csds = {"before": Csd("before", before_tree, work), "after": Csd("after", ROOT, work)}
    rates: dict[str, list[float]] = {"before": [], "after": []}
    print(f"before = {base[:12]} (git archive), after = working tree of {ROOT}; {a.reps} reps x {a.duration} s")
    try:
        for rep in range(a.reps):
            order = ["before", "after"] if rep % 2 == 0 else ["after", "before"]
            for name in order:
                csds[name].toggles(a.warmup)
                load0 = os.getloadavg()[0]
                rate = csds[name].toggles(a.duration) / a.duration
                rates[name].append(rate)
                print(f"  rep {rep + 1} {name:<6} {rate:8.1f} changes/s  load1 {load0:.2f}")
            print(f"  machine busy (all processes, 1 s sample): {others_busy(1.0)} CPUs")
    finally:
        for c in csds.values():
            c.stop()
    ratios = [af / bf for bf, af in zip(rates["before"], rates["after"])]
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\nbefore: median {med['before']:.1f}/s ({min(rates['before']):.1f}..{max(rates['before']):.1f})")
    print(f"after:  median {med['after']:.1f}/s ({min(rates['after']):.1f}..{max(rates['after']):.1f})")
    print(f"after/before per rep: {', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f} "
          f"(target >= 0.95)")


if __name__ == "__main__":
    main()
