"""What `cs` and the client say, as people and runtime developers read it (issue 10's list)."""

import json

import pytest

from csadmin import errors


def test_events_show_names_who_asked_not_a_python_dict(csd):
    with csd.client() as c:
        c.system_standby()
    r = csd.cs("events", "show", "--event-type", "EventStandbyIssued")
    assert r.returncode == 0 and "by=admin" in r.stdout and "{'name'" not in r.stdout


def test_whoami_names_the_session_as_the_readme_says(csd):
    r = csd.cs("whoami")
    session = json.loads(csd.cs("--output-format", "json", "whoami").stdout)["session"]
    assert r.stdout.startswith("admin (admin), session ") and len(session) > 8


def test_a_long_abort_reason_is_kept_whole(csd):
    """`runs show` cut a runtime's reason mid-sentence (the client sent its first 200 characters)."""
    ending = "and this is how the sentence ends."
    with csd.client() as c:
        with pytest.raises(RuntimeError):
            with c.open_run(mode="train", heartbeat=False) as run:
                raise RuntimeError("the input pipeline failed: " + "very " * 60 + ending)
    r = csd.cs("runs", "show", run.id)
    assert ending in r.stdout and "Abort reason" in r.stdout


def test_a_failing_script_names_its_line(csd):
    script = "system show\n# a comment\n\nconfig execmode setup --mode pipelined --no-confirm\nsystem show\n"
    r = csd.cs(input=script)
    assert r.returncode == errors.EXIT_STATE
    assert "Error at line 4 (`config execmode setup --mode pipelined --no-confirm`):" in r.stderr
    r = csd.cs("--output-format", "json", input=script)
    documents = [json.loads(line) for line in r.stdout.splitlines()]  # JSON Lines: one per command
    assert "systemHealth" in documents[0]
    error = documents[-1]["error"]
    assert error["line"] == 4 and error["code"] == "INVALID_STATE"


def test_an_unknown_command_is_not_echoed_whole(csd):
    """A 5,000-character line came back whole (36 lines on a terminal)."""
    r = csd.cs("-c", "x" * 5000)
    assert r.returncode == errors.EXIT_USAGE and len(r.stderr) < 300 and "Unknown command" in r.stderr
    r = csd.cs("system", "show", "--" + "y" * 5000)
    assert r.returncode == errors.EXIT_USAGE and len(r.stderr) < 300


def test_a_runtimes_invalid_argument_hint_names_the_arguments_not_cs_help(csd):
    with csd.client() as c:
        with pytest.raises(errors.InvalidArgument) as info:
            c.open_run(mode="sideways", heartbeat=False)
    assert "cs help" not in info.value.hint
    assert "run.open takes mode (train or eval, required)" in info.value.hint


def test_the_busy_refusal_says_how_to_force_it(csd):
    with csd.client() as c:
        run = c.open_run(mode="train", heartbeat=False, lease_seconds=600)
        r = csd.cs("system", "standby", "--no-confirm")
        assert r.returncode == errors.EXIT_BUSY and "--force" in r.stderr and run.id in r.stderr
        run.close()
