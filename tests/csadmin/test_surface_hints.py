"""A refusal's next step in the words of the surface that shows it (csadmin/errors.py: `api_step`,
`console_step`): FAULT_ACTIVE tells a `cs` user the console command that shows and follows the
health, and a runtime the Python call that waits for it — never the other's words. csd sends
neither (it cannot know who asked); each surface adds its own, and each step is checked to be
something that surface really has."""

from __future__ import annotations

import inspect
import json
import re

import pytest

from csadmin import errors
from csadmin.cli.parse import parse, split
from csadmin.client import Client

pytestmark = pytest.mark.shared_csd  # each test clears the fault it injects
API_WORDS, CONSOLE_WORDS = "wait_for(", "cs events follow"


def test_the_console_step_names_commands_the_console_has():
    hint = errors.FaultActive("refused").console_hint()
    commands = re.findall(r"`cs ([^`]+)`", hint)
    assert len(commands) >= 2 and API_WORDS not in hint
    for command in commands:
        parse(split(command))  # a UsageError here: the hint names a command that does not exist


def test_the_api_step_names_a_call_the_client_has():
    shown = str(errors.FaultActive("refused"))
    assert "Client.wait_for(health=" in shown and CONSOLE_WORDS not in shown
    assert "health" in inspect.signature(Client.wait_for).parameters


def test_a_console_user_refused_by_an_active_fault_is_told_the_console_commands(csd):
    with csd.client() as admin:
        admin.fault_inject("psu-hardware-error")
        try:
            # Activate is refused while a critical fault is active: STANDBY first, as an admin would be.
            admin.system_standby(force=True)
            admin.wait_for(state="STANDBY", timeout=30)
            text = csd.cs("system", "activate", "--no-confirm")
            as_json = csd.cs("system", "activate", "--no-confirm", "--output-format", "json")
        finally:
            admin.fault_clear("psu-hardware-error")
            admin.system_activate()
            admin.wait_for(state="ACTIVE", timeout=30)
    assert text.returncode == errors.EXIT_STATE, text.stderr
    assert "psu-hardware-error" in text.stderr and CONSOLE_WORDS in text.stderr and "cs system show" in text.stderr
    assert API_WORDS not in text.stderr
    error = json.loads(as_json.stdout)["error"]
    assert error["code"] == "FAULT_ACTIVE" and CONSOLE_WORDS in error["hint"] and API_WORDS not in error["hint"]


def test_a_runtime_refused_by_an_active_fault_is_told_the_call_that_waits_and_it_works(csd):
    with csd.client() as admin, csd.client() as runtime:
        admin.fault_inject("psu-hardware-error", for_seconds=1)
        with pytest.raises(errors.FaultActive) as refused:
            runtime.open_run(owner="hinted")
        shown = str(refused.value)
        assert "psu-hardware-error" in shown and 'Client.wait_for(health={"OK", "DEGRADED", "STANDBY"})' in shown
        assert CONSOLE_WORDS not in shown
        # What it says to do does what it says: the fault clears by itself and the run opens.
        assert runtime.wait_for(health={"OK", "DEGRADED", "STANDBY"}, timeout=30)["systemHealth"] == "OK"
        with runtime.open_run(owner="hinted") as run:
            assert run.id
