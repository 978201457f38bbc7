"""The pure model of one CS-2: lifecycle, execution mode and events.

No I/O happens here: no sockets, files, clocks or threads. Time comes in through an injected
clock (milliseconds) and the daemon schedules the timed completions this package announces.
"""
