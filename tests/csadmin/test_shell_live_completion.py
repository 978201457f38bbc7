"""TAB in the real `cs>` shell on a pty completes from the live sources the command table names
(csadmin/cli/sources.py): run ids, the fault catalogue and the event types, fetched from csd."""

from __future__ import annotations

CLEAR_LINE = "\x15"  # Ctrl-U


def completes(term, typed: str, expected: str) -> None:
    term.send(typed + "\t")
    term.wait_for(lambda t: t.prompt_line().rstrip() == f"cs> {expected}", what=f"cs> {expected}")
    term.send(CLEAR_LINE)
    term.wait_for(lambda t: t.prompt_line().rstrip() == "cs>", what="an empty prompt")


def test_tab_completes_run_ids_faults_and_event_types_from_csd(csd, term):
    with csd.client() as c:
        run_id = c.open_run(owner="tab", heartbeat=False).id
    completes(term, "runs show run-", f"runs show {run_id}")
    completes(term, "system fault inject pump-m", "system fault inject pump-missing")
    completes(term, "events show --event-type EventActivateComp", "events show --event-type EventActivateCompleted")
