"""The ZeroMQ limits csd is held against: a bare pyzmq ROUTER echo, with or without CURVE, and
(with a PUB endpoint) the fan-out limit: each request publishes one event and is answered.

The sockets get csd's options (daemon/process/server.py): LINGER 500 ms, MAXMSGSIZE 64 KiB,
ROUTER_HANDOVER, and with CURVE a CURVE server key. No ZAP handler: it costs csd only at the
handshake, not per message. The loop has csd's shape (one zmq.Poller, up to 256 messages per
wake-up) with no work in it, so the gap to csd is csd's own cost per request.

Run by contenders.py with the csd venv's Python: a JSON spec on stdin
({"endpoint", "pub_endpoint"?, "secret_key"?}), `{"ready": true}` on stdout once bound;
SIGTERM stops it.
"""

from __future__ import annotations

import json
import signal
import sys

import zmq

MAX_FRAME_BYTES = 64 * 1024
BATCH = 256


def main() -> None:
    spec = json.loads(sys.stdin.readline())
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.LINGER, 500)
    router.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
    router.setsockopt(zmq.ROUTER_HANDOVER, 1)
    pub = ctx.socket(zmq.PUB) if spec.get("pub_endpoint") else None
    for sock in filter(None, (router, pub)):
        if spec.get("secret_key"):
            sock.setsockopt(zmq.CURVE_SERVER, 1)
            sock.setsockopt(zmq.CURVE_SECRETKEY, spec["secret_key"].encode())
    router.bind(spec["endpoint"])
    if pub is not None:
        pub.setsockopt(zmq.LINGER, 500)
        pub.bind(spec["pub_endpoint"])
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    print(json.dumps({"ready": True}), flush=True)
    poller = zmq.Poller()
    poller.register(router, zmq.POLLIN)
    seq = 0
    # An event the size of csd's EventSetExecMode… (seq, type, severity, time, details.by).
    event_head = b'{"seq":'
    event_tail = (b',"type":"EventSetExecModeWeightStreaming","severity":"INFO","triggerTime":1795435301000,'
                  b'"details":{"execmode":"WEIGHT_STREAMING","by":{"name":"bench-admin",'
                  b'"session":"0123456789abcdef0123456789abcdef"}}}')
    while not stopping:
        if not poller.poll(1000):
            continue
        for _ in range(BATCH):
            try:
                frames = router.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            if pub is not None:
                seq += 1
                pub.send_multipart([b"EventSetExecModeWeightStreaming", event_head + str(seq).encode() + event_tail])
            router.send_multipart(frames)
    router.close()
    if pub is not None:
        pub.close()
    ctx.term()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group; run.py reports it
        sys.exit(130)
