"""A script is parsed and checked whole before its first line runs (issue: a mistake on line 2
or 5 ran half a procedure, leaving the system in STANDBY): every bad line is reported with its
number, exit 2, and csd sees no change. Real `cs` processes against a real csd."""

import json

from csadmin import errors


def events_seen(csd) -> int:
    with csd.client() as c:
        return c.system_show()["seq"]


def test_a_typo_on_line_2_stops_the_activate_on_line_1(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
    seq = events_seen(csd)
    r = csd.cs(input="system activate --no-confirm\nsytem show\n")
    assert r.returncode == errors.EXIT_USAGE
    assert "Error at line 2 (`sytem show`): Unknown command `sytem`." in r.stderr
    assert "Nothing was run" in r.stderr and r.stdout == ""
    with csd.client() as c:
        assert c.system_show()["state"] == "STANDBY", "line 1 must not have run"
    assert events_seen(csd) == seq


def test_every_bad_line_is_reported_with_its_number_and_nothing_runs(csd):
    script = "\n".join([
        "system standby --no-confirm",                               # 1 fine
        "config execmode setup --mode pipelined --no-confirm",       # 2 fine
        "system fault inject temperature-high-warn --for soon --no-confirm",  # 3 not a number
        "events show --max-count many",                              # 4 not a whole number
        "system activate",                                           # 5 no --no-confirm
        "config execmode setup --no-confirm",                        # 6 no --mode in a script
        "system fault clear --no-confirm",                           # 7 neither NAME nor --all
        "system show --colour",                                      # 8 no such option
        'events show --event-type "Event',                           # 9 bad quoting
        "system show; runs show",                                    # 10 ID missing (after a good one)
        "config execmode setup --mode ws --no-confirm",              # 11 no such mode
        "system fault scenario /nonexistent/s.toml --no-confirm",    # 12 no such file
    ])
    seq = events_seen(csd)
    r = csd.cs(input=script)
    assert r.returncode == errors.EXIT_USAGE, r.stderr
    reported = [int(line.split()[3]) for line in r.stderr.splitlines() if line.startswith("Error at line ")]
    assert reported == [3, 4, 5, 6, 7, 8, 9, 10, 11, 12], r.stderr
    assert "--for needs a number of seconds" in r.stderr
    assert "`system activate` changes the system and needs --no-confirm" in r.stderr
    assert "`config execmode setup` needs --mode" in r.stderr
    assert "--mode: unknown execution mode 'ws'" in r.stderr
    assert "Cannot read the scenario file '/nonexistent/s.toml'" in r.stderr
    assert "Nothing was run: fix the script's 10 mistake(s) first." in r.stderr
    assert r.stdout == ""
    with csd.client() as c:
        snap = c.system_show()
    assert snap["state"] == "ACTIVE" and snap["seq"] == seq, "nothing ran: no standby, no events"


def test_c_scripts_are_checked_whole_too(csd):
    r = csd.cs("-c", "system standby --no-confirm; system activat --no-confirm")
    assert r.returncode == errors.EXIT_USAGE
    assert "Did you mean `system activate`?" in r.stderr
    with csd.client() as c:
        assert c.system_show()["state"] == "ACTIVE"


def test_a_checked_script_still_stops_at_its_first_failure_from_csd(csd):
    """What only csd can refuse (the state) still stops the script where it happens."""
    r = csd.cs(input="system show\nconfig execmode setup --mode pipelined --no-confirm\nsystem standby --no-confirm\n")
    assert r.returncode == errors.EXIT_STATE
    assert "Error at line 2" in r.stderr and "Nothing was run" not in r.stderr


def test_script_mistakes_in_json_are_one_object_per_line(csd):
    r = csd.cs("--output-format", "json", input="system show\nsystem stanby --no-confirm\nsystem activate\n")
    assert r.returncode == errors.EXIT_USAGE
    documents = [json.loads(line) for line in r.stdout.splitlines()]
    assert [d["error"].get("line") for d in documents] == [2, 3, None]
    assert documents[0]["error"]["code"] == "USAGE" and "system standby" in documents[0]["error"]["hint"]
