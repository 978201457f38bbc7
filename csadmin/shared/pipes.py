"""When whoever reads our output goes away (`cs events show | head`, `csrun_wse --help | head -1`):
stop quietly with 141 (128 + SIGPIPE, what a shell reports for a Unix tool SIGPIPE killed), as
Unix tools do, never with a BrokenPipeError traceback. Shared by `cs` and the launchers."""

from __future__ import annotations

import functools
import os
import sys

from ..errors import EXIT_BROKEN_PIPE


def reader_gone() -> int:
    """stdout is pointed at /dev/null so the interpreter's last flush of what is still buffered
    cannot fail again on the way out (the recipe in the `signal` module's documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def quiet_when_reader_gone(main):
    """A console script's `main(argv=None) -> int` that ends with reader_gone() on a broken pipe,
    its output flushed before it returns (a pipe buffers: the write that fails may be the last)."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs) -> int:
        try:
            status = main(*args, **kwargs)
            sys.stdout.flush()
            return status
        except BrokenPipeError:
            return reader_gone()

    return wrapped
