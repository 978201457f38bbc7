"""csd's refusals in the console's own words (csadmin/cli/terms.py): no op or argument names of
the protocol reach a `cs` user. The table's ops are csadmin/shared/ops.py's and their argument names are
checked against the op's declaration, so a renamed op or argument cannot silently stop being
translated."""

import json

from csadmin import errors
from csadmin.shared import ops
from csadmin.cli.commands import COMMANDS, NO_CONFIRM, OUTPUT_FORMAT, options_of


def test_every_command_names_a_real_op_and_its_real_arguments():
    for command in COMMANDS:
        if command.op is None:
            continue
        assert command.op in ops.ALL, command.name
        takes = set(command.op.args)
        for option in options_of(command):
            if option not in (NO_CONFIRM, OUTPUT_FORMAT):  # the console's own, never sent
                assert option.op_arg in takes, (command.name, option.name)
        assert {a.op_arg for a in command.arguments if a.op_arg} <= takes, command.name


def test_a_bad_mode_names_the_option_not_the_op(csd):
    with csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
    r = csd.cs("config", "execmode", "setup", "--mode", "ws", "--no-confirm")
    assert r.returncode == errors.EXIT_USAGE
    assert "--mode: unknown execution mode 'ws'" in r.stderr
    assert "See `config execmode setup --help`." in r.stderr
    for leak in ("config.execmode.setup", "dry_run", "takes mode", "Argument 'mode'"):
        assert leak not in r.stderr, r.stderr


def test_busy_says_force_as_the_option(csd):
    with csd.client() as c, c.open_run(owner="trainer"):
        r = csd.cs("system", "standby", "--no-confirm")
    assert r.returncode == errors.EXIT_BUSY
    assert "`system standby --force`" in r.stderr and "force=true" not in r.stderr


def test_permission_denied_names_the_command(csd):
    viewer = csd.add_key("watcher", "viewer")
    r = csd.cs("system", "standby", "--no-confirm", key=viewer)
    assert r.returncode == errors.EXIT_PERMISSION
    assert "system standby needs the admin role" in r.stderr and "system.standby" not in r.stderr
    r = csd.cs("--output-format", "json", "audit", "show", key=viewer)
    assert json.loads(r.stdout)["error"]["message"].startswith("Permission denied: audit show needs the admin role")


def test_a_bad_positional_argument_is_named_as_the_console_does(csd):
    r = csd.cs("runs", "show", "x" * 70)
    assert r.returncode == errors.EXIT_USAGE
    assert r.stderr.startswith("Error: ID: must be a run id") and "run_id" not in r.stderr


def test_the_client_library_keeps_the_protocol_names(csd):
    """Runtimes speak the protocol: their errors still name ops and arguments."""
    viewer = csd.add_key("reader", "viewer")
    with csd.client(key=viewer) as c:
        try:
            c.system_standby()
        except errors.PermissionDenied as exc:
            assert "system.standby needs the admin role" in exc.message
        else:
            raise AssertionError("a viewer put the system in standby")


def test_an_op_two_commands_use_is_named_as_the_command_being_run():
    from csadmin.cli.commands import all_names
    from csadmin.cli.terms import in_console_terms

    refusal = errors.PermissionDenied("Permission denied: events.show needs the viewer role; key 'x' has none.", "")
    assert in_console_terms(refusal, all_names()[("events", "follow")]).message.startswith(
        "Permission denied: events follow needs")
    assert in_console_terms(refusal, all_names()[("system", "show")]).message.startswith(
        "Permission denied: events show needs")  # another op the command called: its own command's name
    translated = in_console_terms(errors.Busy("held", "h", fault="x"), all_names()[("system", "standby")])
    assert type(translated) is errors.Busy and translated.fault == "x" and translated.exit_code == errors.EXIT_BUSY


def test_csds_argument_refusal_names_the_option(csd):
    """--for 0 passes the console's grammar (a number) and is refused by csd's `for_seconds`."""
    r = csd.cs("system", "fault", "inject", "temperature-high-warn", "--for", "0", "--no-confirm")
    assert r.returncode == errors.EXIT_USAGE
    assert r.stderr.startswith("Error: --for: must be more than 0"), r.stderr
    assert "See `system fault inject --help`." in r.stderr
    for leak in ("for_seconds", "system.fault.inject", "dry_run", "Argument"):
        assert leak not in r.stderr, r.stderr
