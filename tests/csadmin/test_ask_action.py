"""The console's generic action (csadmin/cli/actions.py `ask`): a table row that names its op and
`ask` is a whole command — the line's options and arguments become the op's arguments, a change
is checked (dry run) and confirmed first, and the reply is printed. Against a real csd; only the
person answering is stood in for."""

from __future__ import annotations

import json

import pytest

from csadmin import errors
from csadmin.shared import ops
from csadmin.cli import actions
from csadmin.cli.commands import NO_CONFIRM, RUN_ID
from csadmin.cli.grammar import Command, Option, Parsed
from csadmin.cli.action_context import ActionContext

pytestmark = pytest.mark.shared_csd

DATE = Command(("x", "date"), "the clock", actions.ask, reads=True, op=ops.SYSTEM_DATE)
ABORT = Command(("x", "abort"), "abort a run", actions.ask, changes_state=True, op=ops.RUNS_ABORT,
                options=(NO_CONFIRM, Option("--reason", "why", True, "TEXT")), arguments=(RUN_ID,))


class Person:
    """A console whose person answers `yes` (or not) and whose output is kept."""

    in_shell, interactive = False, True

    def __init__(self, yes: bool):
        self.yes, self.lines, self.asked = yes, [], []

    def out(self, text: str) -> None:
        self.lines.append(text)

    def confirm(self, question: str) -> bool:
        self.asked.append(question)
        return self.yes


def run(csd, command: Command, options: dict, args: list[str], yes: bool = True, output: str = "text"):
    person = Person(yes)
    with csd.client() as client:
        code = command.action(ActionContext(client, person, output), Parsed(command, options, args))
    return code, person


def test_a_read_prints_the_reply_keys_or_json(csd):
    code, person = run(csd, DATE, {}, [])
    assert code == errors.EXIT_OK and person.lines[0].startswith("time") and "iso" in person.lines[0]
    _, person = run(csd, DATE, {}, [], output="json")
    assert set(json.loads(person.lines[0])) == {"time", "iso"}


@pytest.mark.own_csd
def test_a_change_is_checked_confirmed_then_made(csd):
    with csd.client() as client:
        run_id = client.open_run(heartbeat=False).id
    line = {"no_confirm": False, "reason": "spec check"}
    with pytest.raises(errors.Cancelled):
        run(csd, ABORT, line, [run_id], yes=False)
    _, person = run(csd, ABORT, line, [run_id])
    assert person.asked == [f"Run {run_id} would be aborted. Do you want to proceed?"]
    assert person.lines == [f"Run {run_id} is aborted; the fabric is free."]
    with csd.client() as client:
        assert client.runs_show(run_id)["abortReason"] == "spec check"
    _, person = run(csd, ABORT, line, [run_id])  # nothing to do: said, nobody asked
    assert person.asked == [] and person.lines == [f"Run {run_id} was already aborted."]


def test_a_refusal_comes_before_any_question(csd):
    with pytest.raises(errors.NotFound):
        run(csd, ABORT, {"no_confirm": False, "reason": None}, ["run-999999"])
