"""The pure model of one CS-2: lifecycle, execution mode, runs and events.

No I/O happens here: no sockets, files, clocks or threads. Time comes in through an injected
clock (milliseconds) and the daemon schedules the timed completions this package announces.

Its import name is `csadmin.statemachine` (the repository's statemachine/ folder, linked from
csadmin/statemachine; docs/design.md, "One install name").
"""

if __name__ != "csadmin.statemachine":
    # Found as a top-level `statemachine` (the repository root on sys.path): a second copy of every
    # module under another name, and the name of PyPI's python-statemachine. Say so instead.
    raise ImportError(f"the device model's package is csadmin.statemachine, not {__name__!r}", name=__name__)
