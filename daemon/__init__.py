"""csd: the CS-2 device daemon. One single-threaded loop owns the device model, persists what
it acknowledges in SQLite before replying, and serves requests and events over ZeroMQ.

Its packages, by concern, top to bottom (each one's docstring says what it owns and what it may
import; tests/test_layers.py holds them to it):

    main.py     `csd`: the command line, then the loop
    process/    the process: boot, the serving loop, settings, logs, systemd, `csd keys`
    serve/      one request from frame to reply, and every change from the model to disk to wire
    commands/   one module per op: its documentation and a few lines calling the model
    metrics/    the opt-in Prometheus metric set and its listener
    store/      the SQLite state store and the checks that refuse a wrong or damaged one
    auth/       CURVE, the key registry and roles, run join tokens

Below them: the model (csadmin.statemachine) and the shared leaves (csadmin/shared/, errors).

Its import name is `csadmin.daemon` (the repository's daemon/ folder, linked from csadmin/daemon;
docs/design.md, "One install name").
"""

if __name__ != "csadmin.daemon":
    # Found as a top-level `daemon` (the repository root on sys.path): a second copy of every
    # module under another name, and the name of PyPI's python-daemon. Say so instead.
    raise ImportError(f"csd's package is csadmin.daemon (`python -m csadmin.daemon`), not {__name__!r}", name=__name__)
