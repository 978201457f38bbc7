"""What the admin scheduled from the shell shows when it fires (issue 26): the watcher dropped
every event tagged with the shell's own session, so a fault injected with `--after`, or a
scenario's step, fired with nothing printed above the prompt. Only the echo of the command just
run (already reported by it) is left out. On a real pty."""

import pytest

from tests.csadmin.terminal import Terminal

SCENARIO = """
[[fault]]
name = "psu-hardware-error"
at = 0.5
"""


def _above_prompt(t: Terminal, text: str) -> None:
    def shown(t):
        lines = t.lines()
        hits = [i for i, line in enumerate(lines) if line.startswith("» ") and text in line]
        prompts = [i for i, line in enumerate(lines) if line.startswith("cs>")]
        return hits and prompts and hits[-1] < prompts[-1] and t.prompt_line() == "cs>"
    t.wait_for(shown, what=f"{text!r} printed above the prompt")


def test_a_fault_injected_with_after_shows_when_it_fires(term):
    term.send("system fault inject temperature-high-warn --after 0.5 --no-confirm\r")
    term.wait_text("will be injected in 0.5 s")
    _above_prompt(term, "EventSensorTemperatureHighWarn (injected)")
    assert "(by admin)" in next(line for line in term.lines() if "EventSensorTemperatureHighWarn" in line)


def test_a_scenario_loaded_from_the_shell_shows_its_critical_fault(term, tmp_path):
    path = tmp_path / "psu.toml"
    path.write_text(SCENARIO)
    term.send(f"system fault scenario {path} --no-confirm\r")
    term.wait_text("Scenario psu.toml loaded: 1 step(s).")
    _above_prompt(term, "EventPsuHardwareError (injected)")
    assert "CRITICAL" in next(line for line in term.lines() if "EventPsuHardwareError" in line)


@pytest.fixture
def slow_term(make_csd):
    csd = make_csd(standby_seconds=2).start()
    t = Terminal(csd)
    t.wait_for(lambda t: t.prompt_line().startswith("cs>") and "ACTIVE" in t.toolbar(), what="prompt and toolbar")
    yield t
    t.close()


def test_a_scheduled_fault_firing_during_another_command_shows_after_it_and_the_echo_does_not(slow_term):
    """It fires while the shell waits for its standby: held until the command is done, then shown;
    the standby's own events (issued, completed) are what the command already said."""
    t = slow_term
    t.send("system fault inject temperature-high-warn --after 0.5 --no-confirm\r")
    t.wait_text("will be injected in 0.5 s")
    t.wait_for(lambda t: t.prompt_line() == "cs>", what="the prompt back")
    t.send("system standby --no-confirm\r")
    t.wait_text("System is in STANDBY.")
    _above_prompt(t, "EventSensorTemperatureHighWarn (injected)")
    lines = t.lines()
    done = next(i for i, line in enumerate(lines) if "System is in STANDBY." in line)
    fired = next(i for i, line in enumerate(lines) if "EventSensorTemperatureHighWarn" in line)
    assert fired > done, "not printed into the command's own output"
    t.send("whoami\r")
    t.wait_text("admin (admin)")
    for echo in ("EventStandbyIssued", "EventPendingStandby", "EventStandbyCompleted", "EventEnteredStandby"):
        assert echo not in t.text(), echo
