"""With JSON asked for anywhere on the line (before or after the command, as `cs help` shows
it), every outcome, errors included, is one JSON object on stdout; a script's are JSON Lines."""

import json

from csadmin import errors


def only_json(r) -> dict:
    """The one JSON object `cs` printed (json.loads fails on anything more), and nothing on stderr."""
    assert r.stderr == "", r.stderr
    return json.loads(r.stdout)


def test_option_after_the_command_makes_errors_json(csd):
    # Issue: printed a text error on stderr and nothing on stdout.
    r = csd.cs("system", "fault", "inject", "temprature-high-warn", "--output-format", "json")
    assert r.returncode == errors.EXIT_USAGE
    assert only_json(r)["error"]["code"] == "USAGE"  # needs --no-confirm: stdin is not a terminal
    r = csd.cs("system", "fault", "inject", "temprature-high-warn", "--output-format=json", "--no-confirm")
    assert r.returncode == errors.EXIT_USAGE
    error = only_json(r)["error"]
    assert error["code"] == "INVALID_ARGUMENT" and "did you mean temperature-high-warn" in error["message"]


def test_parse_errors_and_start_up_errors_are_json_too(csd):
    r = csd.cs("system", "stanby", "--output-format", "json")
    assert r.returncode == errors.EXIT_USAGE and "system standby" in only_json(r)["error"]["hint"]
    r = csd.cs("system", "show", "--bogus", "--output-format", "json")
    assert r.returncode == errors.EXIT_USAGE and only_json(r)["error"]["code"] == "USAGE"
    r = csd.cs("--timeout", "soon", "--output-format", "json", "system", "show")
    assert r.returncode == errors.EXIT_USAGE and "--timeout" in only_json(r)["error"]["message"]


def test_refusals_from_csd_are_json_with_their_code(csd):
    with csd.client() as c, c.open_run(owner="trainer"):
        r = csd.cs("system", "standby", "--no-confirm", "--output-format", "json")
    assert r.returncode == errors.EXIT_BUSY
    assert only_json(r)["error"]["code"] == "BUSY"


def test_unreachable_csd_is_json(csd):
    env_endpoint = "ipc:///nonexistent-dir/csd.sock"
    r = csd.cs("--connect", "/nonexistent/csd.json", "--endpoint", env_endpoint, "--timeout", "0.5",
               "system", "show", "--output-format", "json")
    assert r.returncode != 0
    assert only_json(r)["error"]["code"] in ("UNREACHABLE", "NO_CREDENTIALS")


def test_a_scripts_json_is_one_document_per_line(csd):
    r = csd.cs("--output-format", "json", input="system show\nwhoami\nconfig execmode show\n")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3
    documents = [json.loads(line) for line in lines]
    assert "systemHealth" in documents[0] and documents[1]["role"] == "admin" and "execmode" in documents[2]
    r = csd.cs("-c", "system show --output-format json; whoami --output-format json")
    assert [set(json.loads(line)) >= {"name"} for line in r.stdout.splitlines()] == [False, True]


def test_help_answers_in_json_when_asked(csd):
    for args in (("system", "standby", "--help", "--output-format", "json"),
                 ("--output-format", "json", "help", "system", "standby")):
        r = csd.cs(*args)
        assert r.returncode == 0, r.stderr
        (command,) = only_json(r)["commands"]
        assert command["command"] == "system standby" and command["usage"] == "system standby"
        assert {"name": "--force", "value": None, "help": "abort the run holding the fabric instead of refusing"} \
            in command["options"]
