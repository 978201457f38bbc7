"""Ctrl-D stays a key while the shell runs, even when the terminal is in cooked mode.

prompt_toolkit reads keys in raw mode, but puts the terminal back in cooked mode while it prints
above the prompt (run_in_terminal, which patch_stdout uses for the watcher's event lines), and
the terminal is cooked between prompts too. In cooked mode the line discipline takes Ctrl-D (the
VEOF character) as end-of-file: it is not queued as a key, and once raw mode is back the shell
reads NUL (Ctrl-@) in its place, which does nothing. So a Ctrl-D typed while events were being
printed was lost: the prompt was redrawn and the shell stayed — the slower the terminal reads,
the longer that window (issue 26). With VEOF disabled, Ctrl-D is an ordinary byte in cooked mode
too, queued until prompt_toolkit reads it as the key it is: at an empty prompt, leave.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios


@contextlib.contextmanager
def ctrl_d_as_a_key():
    """Disable the terminal's VEOF character on stdin while inside; restore it on the way out.
    Nothing changes when stdin is not a terminal (or VEOF cannot be disabled on it). A Ctrl-D
    typed while a command runs is kept too: the shell leaves once the command is done."""
    fd, eof = _disable_veof()
    try:
        yield
    finally:
        if eof is not None:
            try:  # only VEOF: prompt_toolkit has already restored the rest as it found it
                now = termios.tcgetattr(fd)
                now[6][termios.VEOF] = eof
                termios.tcsetattr(fd, termios.TCSANOW, now)
            except termios.error:
                pass


def _disable_veof() -> tuple[int, bytes | None]:
    """(stdin's fd, the VEOF character it had) once disabled; (fd, None) if nothing changed."""
    try:
        fd = sys.stdin.fileno()
        attrs = termios.tcgetattr(fd)
        disabled = os.fpathconf(fd, "PC_VDISABLE")
        if disabled < 0:
            return fd, None
        eof = attrs[6][termios.VEOF]
        attrs[6][termios.VEOF] = bytes([disabled])
        termios.tcsetattr(fd, termios.TCSANOW, attrs)
    except (OSError, ValueError, termios.error):
        return -1, None
    return fd, eof
