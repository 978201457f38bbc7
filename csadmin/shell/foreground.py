"""The shell in a process group of its own, in the terminal's foreground.

A terminal sends Ctrl-C (SIGINT) to its whole foreground process group. When `cs` is started by
something else in that group — `make run`, a wrapper script — the parent gets the SIGINT too:
make then waits for cs and, once cs is done, kills itself with it (exit 130, "Interrupt"), even
though the person only meant to cancel one wait in the shell. So while the shell runs, cs moves
into a group of its own and takes the terminal's foreground; on the way out it gives both back.
Ctrl-Z is ignored meanwhile: a stopped cs would leave the terminal to a group its parent's job
control does not know about.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


@contextlib.contextmanager
def own_foreground_group():
    try:
        fd = sys.stdin.fileno()
        parent_group = os.getpgrp()
        in_foreground = os.tcgetpgrp(fd) == parent_group
    except (OSError, ValueError):
        in_foreground = False
    if not in_foreground or parent_group == os.getpid():  # in the background, or alone already
        yield
        return
    ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # tcsetpgrp from a group not (yet) foreground
    tstp = signal.signal(signal.SIGTSTP, signal.SIG_IGN)
    moved = False
    try:
        os.setpgid(0, 0)
        os.tcsetpgrp(fd, os.getpgrp())
        moved = True
    except OSError:
        pass
    finally:
        signal.signal(signal.SIGTTOU, ttou)
    try:
        yield
    finally:
        if moved:
            signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            try:
                os.tcsetpgrp(fd, parent_group)
                os.setpgid(0, parent_group)
            except OSError:
                pass
            finally:
                signal.signal(signal.SIGTTOU, ttou)
        signal.signal(signal.SIGTSTP, tstp)
