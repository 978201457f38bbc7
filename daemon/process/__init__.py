"""csd as a process: everything that starts, runs and stops it, and nothing a request needs.

    server.py         the serving loop: one thread, one zmq.Poller, signals, reload, watchdog
    failures.py       a bug outside the rules logged once with its traceback, then counted
    boot.py           what happens before csd answers anyone, in order (and its undoing)
    config.py         the settings: defaults < /etc/csd/csd.toml < flags
    metrics_start.py  the metric set and its listener, or NO_METRICS, at boot
    logs.py           structlog: JSON lines, or a console rendering on a terminal
    notify.py         sd_notify: READY=1, RELOADING=1, STOPPING=1, WATCHDOG=1, STATUS=
    mmap_threshold.py giving memory back to the kernel after a burst of large frames
    keys_command.py   `csd keys`: the server keypair and the client keys csd admits

The top of csd: it may import every other package of csd (serve, commands, store, auth,
metrics), the model and the shared leaves; nothing of csd imports it but daemon/main.py
(tests/test_layers.py).
"""
