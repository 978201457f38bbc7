"""Ctrl-C and "no", on a real pty, read as what they are (issue 26): Ctrl-C during a wait says the
transition carries on and how to follow it; "n", Ctrl-C at [y/N] and Ctrl-C in the mode menu all
say plainly that nothing was changed — none of them is an "Error"."""

import os
import sys

import pexpect
import pytest

from csadmin import errors
from tests.csadmin.terminal import Terminal
from tests.harness import ROOT

CANCELLED = "Cancelled; nothing was changed."


@pytest.fixture
def slow_term(make_csd):
    """The shell on a csd whose standby takes 30 s, so a wait is there to interrupt."""
    csd = make_csd(standby_seconds=30).start()
    t = Terminal(csd)
    t.wait_for(lambda t: t.prompt_line().startswith("cs>") and "ACTIVE" in t.toolbar(), what="prompt and toolbar")
    t.csd = csd
    yield t
    t.close()


def _idle(t: Terminal) -> None:
    t.wait_for(lambda t: t.prompt_line() == "cs>", what="an idle prompt")


def test_ctrl_c_during_a_wait_says_the_transition_carries_on_and_how_to_follow_it(slow_term):
    t = slow_term
    t.send("system standby --no-confirm\r")
    t.wait_text("System is going to STANDBY")
    t.send("\x03")
    t.wait_text("Stopped waiting; the system carries on to STANDBY")
    _idle(t)
    text = t.text()
    assert "`events follow`" in text and "`system show`" in text, text
    assert "Error" not in text
    with t.csd.client() as c:
        assert c.system_show()["state"] == "PENDING_STANDBY"


def test_no_at_the_question_is_not_an_error(term):
    term.send("system standby\r")
    term.wait_text("Do you want to proceed?")
    term.send("n\r")
    term.wait_text(CANCELLED)
    _idle(term)
    assert "Error" not in term.text()


def test_ctrl_c_at_the_question_reads_the_same(term):
    term.send("system standby\r")
    term.wait_text("Do you want to proceed?")
    term.send("\x03")
    term.wait_text(CANCELLED)
    _idle(term)
    assert "Error" not in term.text() and "Interrupted" not in term.text()


def test_ctrl_c_in_the_mode_menu_reads_the_same(term, csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
    term.wait_for(lambda t: "│ STANDBY │" in t.toolbar(), what="STANDBY in the toolbar")
    term.send("config execmode setup\r")
    term.wait_text("Select execution mode configuration:")
    term.send("\x03")
    term.wait_text(CANCELLED)
    _idle(term)
    assert "Error" not in term.text() and "Interrupted" not in term.text()
    with csd.client() as c:
        assert c.execmode_show()["execmode"] == "PIPELINED"


def _one_shot(csd, *args) -> pexpect.spawn:
    env = csd.env()
    env.update(TERM="xterm", PROMPT_TOOLKIT_NO_CPR="1")
    return pexpect.spawn(sys.executable, ["-m", "csadmin", *args], env=env, cwd=ROOT, encoding="utf-8",
                         timeout=20, dimensions=(40, 160))


@pytest.mark.parametrize("answer", ["n\r", "\x03"], ids=["no", "ctrl-c"])
def test_one_shot_no_or_ctrl_c_at_the_question_exits_1_without_error(csd, answer):
    child = _one_shot(csd, "system", "standby")
    try:
        child.expect_exact("Do you want to proceed?")
        child.send(answer)
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == errors.EXIT_CANCELLED
    assert CANCELLED in child.before and "Error" not in child.before and "Traceback" not in child.before
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"
