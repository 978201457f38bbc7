"""The shell across systems, on a real pty: started with --system, `use NAME` switches the
system commands go to, and the prompt and the toolbar say which one it is."""

from __future__ import annotations

from tests.csadmin.fleet import Fleet
from tests.csadmin.terminal import Terminal


def test_use_switches_the_system_and_the_prompt_and_toolbar_follow(make_csd):
    a = make_csd(extra_args=["--serial", "CS2-000A"]).start()
    b = make_csd(extra_args=["--serial", "CS2-000B"]).start()
    fleet = Fleet({"lab-a": a, "lab-b": b})
    env = fleet.env(XDG_STATE_HOME=f"{fleet.dir}/xdg")
    t = Terminal(env=env, args=("--system", "lab-a"))
    try:
        t.wait_for(lambda t: t.text().count("cs[lab-a]>") and "lab-a │ CS2-000A │ ACTIVE" in t.toolbar(),
                   what="prompt and toolbar naming lab-a")
        t.send("use lab-bb\r")
        t.wait_text("No system `lab-bb` in the inventory")
        t.wait_text("Did you mean `lab-b`?")
        t.send("use lab-b\r")
        t.wait_text("Using lab-b: CS2-000B ACTIVE in PIPELINED, systemHealth OK.")
        t.wait_for(lambda t: any(line.startswith("cs[lab-b]>") for line in t.lines()), what="the prompt naming lab-b")
        t.wait_for(lambda t: "lab-b │ CS2-000B │ ACTIVE" in t.toolbar(), what="the toolbar on lab-b")
        # Commands go to lab-b now, and the toolbar follows lab-b's state.
        t.send("system standby --no-confirm\r")
        t.wait_for(lambda t: "lab-b │ CS2-000B │ STANDBY" in t.toolbar(), what="lab-b in STANDBY on the toolbar")
        with a.client() as c, b.client() as d:
            assert (c.system_show()["state"], d.system_show()["state"]) == ("ACTIVE", "STANDBY")
        t.send("inventory\r")
        t.wait_text("* lab-b")
    finally:
        t.close()
        fleet.cleanup()


def test_use_of_a_stopped_system_is_refused_and_the_shell_stays(make_csd):
    a = make_csd(extra_args=["--serial", "CS2-000A"]).start()
    down = make_csd().start()
    down.stop()
    fleet = Fleet({"lab-a": a, "down": down})
    t = Terminal(env=fleet.env(XDG_STATE_HOME=f"{fleet.dir}/xdg"), args=("--system", "lab-a"))
    try:
        t.wait_for(lambda t: "lab-a │ CS2-000A │ ACTIVE" in t.toolbar(), what="toolbar on lab-a")
        t.send("use down\r")
        t.wait_text("No connection file at")
        t.send("system show\r")
        t.wait_text("System         : CS2-000A (cs2)")
        assert "lab-a │ CS2-000A" in t.toolbar()
    finally:
        t.close()
        fleet.cleanup()


def test_ctrl_c_in_the_shell_during_a_rolling_change_lets_the_started_system_finish(make_csd):
    daemons = {f"s{i}": make_csd(activate_seconds=1.0, standby_seconds=1.0).start() for i in range(3)}
    fleet = Fleet(daemons)
    t = Terminal(env=fleet.env(XDG_STATE_HOME=f"{fleet.dir}/xdg"), args=("--system", "s0"))
    try:
        t.wait_for(lambda t: "s0 │" in t.toolbar() and "ACTIVE" in t.toolbar(), what="toolbar on s0")
        t.send("fleet execmode setup --mode weight-streaming --systems s0,s1,s2 --no-confirm\r")
        t.wait_text("s0 │ standby (ACTIVE)")
        t.send("\x03")
        t.wait_text("Interrupted: no more systems will be started; waiting for s0 to finish.")
        t.wait_text("1 done, 2 skipped, 0 failed.")
        assert "not started: interrupted" in t.text()
        with daemons["s0"].client() as c, daemons["s1"].client() as d:
            assert (c.system_show()["activeExecmode"], d.system_show()["activeExecmode"]) == (
                "WEIGHT_STREAMING", "PIPELINED")
        t.send("whoami\r")  # the shell carries on
        t.wait_text("admin (admin), session")
    finally:
        t.close()
        fleet.cleanup()
