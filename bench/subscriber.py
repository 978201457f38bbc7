"""Event subscribers for the fan-out figure: N CURVE SUB sockets in one process, each recording
(seq, CLOCK_MONOTONIC ns) of every event it receives.

Run by fanout.py with the csd venv's Python. Reads a JSON spec line ({"endpoint", "curve",
"count", "prefix"}), connects, prints `{"ready": true}`, prints `{"joined": true}` once every
socket has received an event (PUB/SUB joins asynchronously), and on a `stop` line on stdin
prints {"events": [[[seq, t_ns], ...] per socket]} and exits.
"""

from __future__ import annotations

import json
import re
import sys
import time

import zmq

SEQ = re.compile(rb'"seq":\s*(\d+)')


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    ctx = zmq.Context()
    socks = []
    for _ in range(spec["count"]):
        s = ctx.socket(zmq.SUB)
        s.setsockopt(zmq.LINGER, 0)
        s.setsockopt(zmq.SUBSCRIBE, spec["prefix"].encode())
        curve = spec["curve"]
        s.setsockopt(zmq.CURVE_SERVERKEY, curve["server_key"].encode())
        s.setsockopt(zmq.CURVE_PUBLICKEY, curve["public_key"].encode())
        s.setsockopt(zmq.CURVE_SECRETKEY, curve["secret_key"].encode())
        s.connect(spec["endpoint"])
        socks.append(s)
    index = {s: i for i, s in enumerate(socks)}
    events: list[list] = [[] for _ in socks]
    poller = zmq.Poller()
    for s in socks:
        poller.register(s, zmq.POLLIN)
    stdin = sys.stdin.fileno()
    poller.register(stdin, zmq.POLLIN)
    print(json.dumps({"ready": True}), flush=True)
    joined = False
    while True:
        for s, _ in poller.poll(1000):
            if s == stdin:
                sys.stdin.readline()
                print(json.dumps({"events": events}), flush=True)
                return
            while True:
                try:
                    frames = s.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                at = time.monotonic_ns()
                m = SEQ.search(frames[-1])
                events[index[s]].append([int(m.group(1)) if m else -1, at])
        if not joined and all(events):
            joined = True
            print(json.dumps({"joined": True}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; run.py reports it
        sys.exit(130)
