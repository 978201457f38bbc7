"""Pre-flight before confirmation, in the real shell on a pty: a request that cannot happen is
refused, and one with nothing to do is reported, before anyone is asked "Do you want to
proceed?" — it used to ask first and fail after "y" (issue 10)."""

from tests.csadmin.terminal import Terminal

QUESTION = "Do you want to proceed?"


def _answer_to(t: Terminal, line: str) -> str:
    """Type `line`; return what the shell printed before its next prompt (failing if it asked)."""
    t.wait_for(lambda t: t.prompt_line() == "cs>", what="an idle prompt")
    before = len([text for text in t.lines() if text == f"cs> {line}"])
    t.send(line + "\r")

    def answered(t) -> str | None:
        lines = t.lines()
        typed = [i for i, text in enumerate(lines) if text == f"cs> {line}"]
        if len(typed) <= before:
            return None
        after = lines[typed[-1] + 1:]
        done = any(text == "cs>" for text in after) or any(QUESTION in text for text in after)
        return "\n".join(after) if done else None

    t.wait_for(answered, what=f"the answer to {line!r}")
    out = answered(t)
    if QUESTION in out:
        t.send("n\r")
        raise AssertionError(f"{line!r} asked for confirmation:\n{out}")
    return out.replace("\n", " ")


def test_bad_values_and_wrong_states_are_refused_before_asking(term, csd):
    out = _answer_to(term, "config execmode setup --mode foo")
    assert "unknown execution mode 'foo'" in out and "PIPELINED, WEIGHT_STREAMING" in out
    out = _answer_to(term, "config execmode setup --mode pipelined")
    assert "only be changed in STANDBY" in out and "system standby" in out
    out = _answer_to(term, "config execmode setup")  # the chooser is not offered either
    assert "only be changed in STANDBY" in out and "Select execution mode" not in out
    assert "System is already in ACTIVE." in _answer_to(term, "system activate")
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"
        assert not [e for e in c.audit_show() if e["op"] == "config.execmode.setup"], "checks are not audited"


def test_standby_while_a_run_holds_the_fabric_is_busy_before_asking_and_names_force(term, csd):
    with csd.client() as runtime:
        run = runtime.open_run(mode="train", heartbeat=False, lease_seconds=600)
        out = _answer_to(term, "system standby")
        assert f"held by run {run.id}" in out and "--force" in out
        term.send("system standby --force\r")
        term.wait_text(f"Run {run.id} (owner")
        term.wait_text(QUESTION)
        term.send("n\r")
        term.wait_text("Cancelled; nothing was changed.")
        assert runtime.runs_show(run.id)["status"] == "OPEN"
        run.close()
        out = _answer_to(term, f"runs abort {run.id}")
        assert f"Run {run.id} is already closed; there is nothing to abort." in out
    assert "No run 'run-999999'" in _answer_to(term, "runs abort run-999999")


def test_an_already_aborted_run_is_reported_without_asking(term, csd):
    with csd.client() as runtime:
        run = runtime.open_run(mode="train", heartbeat=False)
        runtime.runs_abort(run.id, reason="test")
    out = _answer_to(term, f"runs abort {run.id}")
    assert f"Run {run.id} was already aborted." in out


def test_a_change_that_can_happen_is_still_asked_for(term, csd):
    term.send("system standby\r")
    term.wait_text(QUESTION)
    term.send("n\r")
    term.wait_text("Cancelled; nothing was changed.")
