"""csd: the CS-2 device daemon. One single-threaded loop owns the device model, persists what
it acknowledges in SQLite before replying, and serves requests and events over ZeroMQ.

Its import name is `csadmin.daemon` (the repository's daemon/ folder, linked from csadmin/daemon;
docs/design.md, "One install name").
"""

if __name__ != "csadmin.daemon":
    # Found as a top-level `daemon` (the repository root on sys.path): a second copy of every
    # module under another name, and the name of PyPI's python-daemon. Say so instead.
    raise ImportError(f"csd's package is csadmin.daemon (`python -m csadmin.daemon`), not {__name__!r}", name=__name__)
