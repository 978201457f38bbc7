"""Colour for health and errors on a terminal (a real pty), none with NO_COLOR, none in a pipe;
and the execution-mode menu's key hints, on the real shell's screen."""

import sys

import pexpect

from tests.harness import ROOT

GREEN_OK = "\x1b[32mOK\x1b[0m"
RED_ERROR = "\x1b[1;31mError\x1b[0m"


def on_a_pty(csd, *args: str, **env: str) -> str:
    """What `cs ARGS` writes on a real terminal (stdout and stderr both the pty)."""
    child = pexpect.spawn(sys.executable, ["-m", "csadmin", *args], env={**csd.env(), "TERM": "xterm", **env},
                          cwd=ROOT, encoding="utf-8", timeout=30, dimensions=(30, 160))
    child.expect(pexpect.EOF)
    child.close()
    return child.before


def test_health_and_errors_are_coloured_on_a_terminal(csd):
    out = on_a_pty(csd, "system", "show")
    assert GREEN_OK in out, repr(out)
    out = on_a_pty(csd, "system", "stanby")
    assert out.startswith(RED_ERROR + ": `system` has no command `stanby`"), repr(out)
    with csd.client() as c:
        c.fault_inject("temperature-high-warn")
    out = on_a_pty(csd, "system", "show")
    assert "\x1b[33mDEGRADED\x1b[0m" in out
    out = on_a_pty(csd, "events", "show", "--event-type", "EventSensor*")
    assert "\x1b[33mWARN    \x1b[0m EventSensor" in out, repr(out)


def test_no_colour_with_no_color_set(csd):
    for args in (("system", "show"), ("system", "stanby")):
        out = on_a_pty(csd, *args, NO_COLOR="1")
        assert "\x1b[" not in out, repr(out)


def test_no_colour_in_a_pipe(csd):
    r = csd.cs("system", "show")
    assert "systemHealth   : OK" in r.stdout and "\x1b" not in r.stdout
    r = csd.cs("system", "stanby")
    assert r.stderr.startswith("Error: ") and "\x1b" not in r.stderr


def test_the_execution_mode_menu_shows_its_keys(csd, term):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
    term.send("config execmode setup\r")
    term.wait_text("Select execution mode configuration:")
    term.wait_text("↑/↓ or a number: move   Enter: select   Ctrl-C: cancel")
    term.send("2")
    term.send("\r")
    term.wait_text("Selected execution mode configuration: ✔ Weight Streaming")
