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
        t.send("systems\r")
        t.wait_text("* lab-b")
    finally:
        t.close()
        fleet.cleanup()
