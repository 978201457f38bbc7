"""The five-step procedure typed into the real `cs>` shell on a pty, asserting the exact strings."""

import os
import sys

import pexpect

from tests.harness import ROOT

DOWN = "\x1b[B"


def spawn_shell(csd, extra_env=None):
    env = csd.env()
    env.update({"TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "XDG_STATE_HOME": os.path.join(csd.dir, "xdg")})
    env.update(extra_env or {})
    child = pexpect.spawn(
        sys.executable, ["-m", "csadmin"], env=env, cwd=ROOT, encoding="utf-8", timeout=20, dimensions=(40, 160)
    )
    child.expect_exact("cs>")
    return child


def test_five_steps_in_the_shell(csd):
    child = spawn_shell(csd)
    try:
        child.sendline("config execmode show")
        child.expect_exact("Configured Execution Mode : PIPELINED")
        child.expect_exact("cs>")

        child.sendline("system standby")
        child.expect_exact("This puts the system in standby. Do you want to proceed?")
        child.sendline("y")
        child.expect_exact("System is in STANDBY.")
        child.expect_exact("cs>")

        child.sendline("config execmode setup")
        child.expect_exact("Select execution mode configuration:")
        child.expect_exact("Weight Streaming")
        child.send(DOWN)
        child.send("\r")
        child.expect_exact("Selected execution mode configuration: ✔ Weight Streaming")
        child.expect_exact("cs>")

        child.sendline("system activate")
        child.expect_exact("Do you want to proceed?")
        child.sendline("y")
        child.expect_exact("System is ACTIVE in WEIGHT_STREAMING.")
        child.expect_exact("cs>")

        child.sendline("config execmode show")
        child.expect_exact("Configured Execution Mode : WEIGHT_STREAMING")
        child.expect_exact("cs>")
        child.sendeof()  # Ctrl-D leaves with 0
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    with csd.client() as c:
        snap = c.system_show()
    assert (snap["state"], snap["activeExecmode"]) == ("ACTIVE", "WEIGHT_STREAMING")


def test_declining_confirmation_changes_nothing(csd):
    child = spawn_shell(csd)
    try:
        child.sendline("system standby")
        child.expect_exact("Do you want to proceed?")
        child.sendline("n")
        child.expect_exact("Cancelled; nothing was changed.")
        child.expect_exact("cs>")
        child.sendline("exit")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"
