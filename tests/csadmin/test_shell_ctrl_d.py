"""Ctrl-D at the `cs>` prompt leaves, whatever the shell was printing (issue 26).

It was lost after events: the shell prints them above the prompt through prompt_toolkit's
run_in_terminal, which puts the terminal in cooked mode while it writes. A Ctrl-D typed then is
taken by the terminal's line discipline as end-of-file, and once raw mode is back it reaches the
shell as NUL (Ctrl-@), which does nothing: the prompt was redrawn, the shell stayed. The window is
as long as the write: long on a terminal that is slow to read (here: one that stops reading for a
while, and never answers cursor-position requests)."""

import os
import termios
import time

import pexpect
import pytest

from tests.csadmin.terminal import Terminal
from tests.harness import wait_until


def _silent_terminal(csd) -> Terminal:
    t = Terminal(csd)
    t.screen.answer = None  # never answers CSI 6n
    t.wait_for(lambda t: t.prompt_line() == "cs>", what="the prompt")
    return t


def _leaves(t: Terminal, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t.pump()  # reading again: the shell's writes go through
        if not t.child.isalive():
            return True
    return False


def _takes(tty_path: str, data: bytes) -> bool:
    """Whether the terminal's buffer has room for `data` now, written as another writer on it (a
    background job, `wall`) would. False: it is full, so the shell's next write blocks."""
    fd = os.open(tty_path, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK)
    try:
        os.write(fd, data)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


@pytest.mark.parametrize("full", [False, True], ids=["events", "terminal-already-full"])
def test_ctrl_d_typed_while_events_are_printed_above_the_prompt_leaves(csd, full):
    t = _silent_terminal(csd)
    tty_path = f"/proc/{t.child.pid}/fd/0"
    tty = os.open(tty_path, os.O_RDWR | os.O_NOCTTY)
    try:
        while full and _takes(tty_path, b"~" * 64):
            pass  # the shell's next write blocks in raw mode, the path that once hung this test
        # The terminal stops reading; events keep coming until the shell's write above the
        # prompt blocks, in cooked mode. How many that takes depends on the kernel's pty buffer
        # (tens of KiB; a burst prints about 10 KiB), so it is a condition, not a count. The
        # buffer may also fill during the prompt's redraw, in raw mode: the shell then waits there
        # until the terminal reads, and the kernel wakes a writer blocked on a pty only once its
        # reader has emptied the buffer (Linux 6.18: 20 KiB read 256 bytes at a time, no progress
        # until the last). So once the buffer is full and the shell is not in cooked mode, the
        # terminal catches up with all it was sent (pump), as a slow one does, and the bursts
        # begin again. Reading before the buffer is full would keep it from ever filling.
        def cooked():
            """In cooked mode and still there 0.2 s on: blocked, not one of the brief writes."""
            settled = time.monotonic() + 0.2
            while termios.tcgetattr(tty)[3] & termios.ICANON:
                if time.monotonic() > settled:
                    return True
                time.sleep(0.01)
            return False

        deadline = time.monotonic() + 60
        with csd.client() as other:
            while not cooked():
                assert time.monotonic() < deadline, "the shell never wrote above the prompt"
                if not _takes(tty_path, b"~"):
                    t.pump()  # full, and the shell blocked outside cooked mode: catch up
                for _ in range(50):
                    other.fault_inject("temperature-high-warn")
                    other.fault_clear(all=True)
                try:
                    wait_until(cooked, timeout=0.5)
                except AssertionError:
                    pass  # not yet: the buffer may be full in raw mode (then a catch-up), or not yet full
        t.send("\x04")
        assert _leaves(t), f"Ctrl-D was lost; screen:\n{t.text()[-2000:]}"
        t.child.close()
        assert t.child.exitstatus == 0
    finally:
        os.close(tty)
        if t.child.isalive():
            t.child.terminate(force=True)


def test_ctrl_d_leaves_after_events_on_a_terminal_that_never_answers_cursor_requests(csd):
    t = _silent_terminal(csd)
    try:
        with csd.client() as other:
            other.system_standby()
            other.wait_for(state="STANDBY", timeout=10)
        t.wait_text("EventStandbyCompleted")
        t.wait_for(lambda t: t.prompt_line() == "cs>", what="the prompt redrawn under the events")
        t.send("\x04")
        t.child.expect(pexpect.EOF, timeout=15)
        t.child.close()
        assert t.child.exitstatus == 0
    finally:
        if t.child.isalive():
            t.child.terminate(force=True)


def test_the_terminal_gets_its_ctrl_d_back_when_the_shell_leaves():
    """The terminal is shared with whatever started cs (bash, make): VEOF is restored on exit."""
    import sys

    from tests.harness import ROOT

    code = ("import sys, termios\n"
            "from csadmin.shell.ctrl_d import ctrl_d_as_a_key\n"
            "eof = lambda: termios.tcgetattr(0)[6][termios.VEOF]\n"
            "before = eof()\n"
            "with ctrl_d_as_a_key():\n"
            "    inside = eof()\n"
            "print(before, inside, eof())\n")
    child = pexpect.spawn(sys.executable, ["-c", code], cwd=ROOT, encoding="utf-8", timeout=20)
    child.expect(pexpect.EOF)
    child.close()
    assert child.before.split() == ["b'\\x04'", "b'\\x00'", "b'\\x04'"] and child.exitstatus == 0


def test_ctrl_d_typed_during_a_wait_leaves_once_the_command_is_done(make_csd):
    csd = make_csd(standby_seconds=2).start()
    t = Terminal(csd)
    try:
        t.wait_for(lambda t: t.prompt_line() == "cs>", what="the prompt")
        t.send("system standby --no-confirm\r")
        t.wait_text("System is going to STANDBY")
        t.send("\x04")  # the terminal is in cooked mode while the command waits
        t.child.expect(pexpect.EOF, timeout=20)
        t.pump()
        t.child.close()
        assert "System is in STANDBY." in t.raw + (t.child.before or "") and t.child.exitstatus == 0
    finally:
        if t.child.isalive():
            t.child.terminate(force=True)
