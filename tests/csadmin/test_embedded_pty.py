"""`cs --embedded` (what `make run` starts) on a real pty: Ctrl-C during any wait cancels only
that wait — the private csd is in its own session and never sees the terminal's SIGINT — the
toolbar names the endpoint csd really listens on, and leaving is clean (issue 10)."""

import json
import os
import re
import signal
import tempfile

import pytest

from tests.csadmin.terminal import Terminal
from tests.harness import ROOT, wait_until


@pytest.fixture
def shell():
    home = tempfile.mkdtemp(prefix="cs-embedded-t-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CS_", "CSD_"))}
    env.update(PYTHONPATH=ROOT, XDG_STATE_HOME=home, XDG_CONFIG_HOME=home)
    t = Terminal(args=["--embedded"], env=env)
    t.wait_for(lambda t: t.prompt_line().startswith("cs>") and "ACTIVE" in t.toolbar(), timeout=60,
               what="the embedded csd up and the prompt")
    match = re.search(r"CS_CONNECT=(\S+)", t.text().replace("\n", " "))
    t.connection_file = match.group(1)
    with open(t.connection_file) as f:
        info = json.load(f)
    t.csd_pid, t.endpoint = info["pid"], info["endpoint"]
    yield t
    if t.child.isalive():
        t.child.terminate(force=True)
    if _alive(t.csd_pid):
        os.kill(t.csd_pid, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # it may be reaped between the two looks: /proc then says ENOENT or ESRCH
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def _prompt_back(t: Terminal, after: str):
    t.wait_for(lambda t: after in t.text() and t.prompt_line() == "cs>", what=f"{after!r} and the prompt back")


def test_ctrl_c_during_waits_cancels_only_the_wait(shell):
    t = shell
    assert os.getsid(t.csd_pid) != os.getsid(t.child.pid), "csd runs in its own session"
    # A transition's wait (standby takes 3 s in the embedded csd).
    t.send("system standby\r")
    t.wait_text("Do you want to proceed?")
    t.send("y\r")
    t.wait_text("System is going to STANDBY")
    t.send("\x03")
    _prompt_back(t, "Stopped waiting; the system carries on to STANDBY.")
    assert _alive(t.csd_pid), "the terminal's Ctrl-C did not reach csd"
    t.send("system show\r")
    t.wait_for(lambda t: re.search(r"State\s+: (PENDING_STANDBY|STANDBY)", t.text()), what="csd answering")
    t.wait_for(lambda t: "│ STANDBY │" in t.toolbar(), what="the standby completed")
    # A confirmation: Ctrl-C is "no".
    t.send("system activate\r")
    t.wait_for(lambda t: t.text().count("Do you want to proceed?") == 2, what="the second question")
    t.send("\x03")
    _prompt_back(t, "Cancelled; nothing was changed.")
    # events follow: Ctrl-C ends it.
    t.send("events follow\r")
    t.wait_text("Following events; Ctrl-C stops.")
    t.send("\x03")
    _prompt_back(t, "Stopped following events.")
    assert _alive(t.csd_pid)
    t.send("whoami\r")
    t.wait_text("admin (admin)")
    # Ctrl-D leaves with 0, stops csd, and nothing is left complaining.
    t.child.sendeof()
    t.child.expect(r"\Z|$", timeout=20)
    t.pump()
    assert t.close() == 0
    wait_until(lambda: not _alive(t.csd_pid), what="the embedded csd stopped")
    assert "Exception in thread" not in t.raw and "Traceback" not in t.raw


def test_the_toolbar_names_the_endpoint_csd_really_listens_on(shell):
    """It named ipc:///run/csd/csd.sock: the default, captured before the connection file was read."""
    t = shell
    assert "/run/csd/" not in t.endpoint
    os.kill(t.csd_pid, signal.SIGKILL)
    t.wait_for(lambda t: "unreachable" in t.toolbar(), what="the toolbar saying csd is gone")
    assert t.endpoint in t.toolbar()


def test_under_make_ctrl_c_in_a_wait_does_not_end_make(tmp_path):
    """`make run` exited 130 ("Interrupt") after a Ctrl-C in the shell, even once the person had
    carried on and left with Ctrl-D: make shares the terminal's foreground process group."""
    import sys

    makefile = tmp_path / "Makefile"
    makefile.write_text(f"run:\n\t{sys.executable} -m csadmin --embedded\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CS_", "CSD_", "MAKE"))}
    env.update(PYTHONPATH=ROOT, XDG_STATE_HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    t = Terminal(env=env, command=("make", ["-s", "-f", str(makefile), "run"]), cwd=str(tmp_path))
    t.wait_for(lambda t: t.prompt_line().startswith("cs>") and "ACTIVE" in t.toolbar(), timeout=60,
               what="the shell under make")
    t.send("system standby --no-confirm\r")
    t.wait_text("System is going to STANDBY")
    t.send("\x03")
    _prompt_back(t, "Stopped waiting; the system carries on to STANDBY.")
    t.send("system show\r")
    t.wait_text("systemHealth")
    assert t.close() == 0, "make exits 0 when the shell does"
    assert "Interrupt" not in t.raw


@pytest.mark.parametrize("how", [signal.SIGHUP, signal.SIGKILL], ids=["terminal-closed", "shell-killed"])
def test_the_private_csd_and_its_directory_go_however_the_shell_ends(shell, how):
    """A closed terminal (SIGHUP) or a killed shell (SIGKILL) left the embedded csd serving for
    ever, re-parented to init, with its temp directory (issue 26)."""
    t = shell
    directory = os.path.dirname(t.connection_file)
    assert os.path.isdir(directory) and _alive(t.csd_pid)
    os.kill(t.child.pid, how)
    wait_until(lambda: not t.child.isalive(), timeout=5, what="the shell gone")
    wait_until(lambda: not _alive(t.csd_pid) and not os.path.exists(directory), timeout=5,
               what="the embedded csd stopped and its directory removed")


def test_leaving_normally_removes_the_directory_too(shell):
    t = shell
    directory = os.path.dirname(t.connection_file)
    assert t.close() == 0
    assert not _alive(t.csd_pid) and not os.path.exists(directory), "gone by the time the shell has exited"
