"""`--help` after any command or group, `cs --help`, `csd --help`, and "did you mean" for a
mistyped subcommand: the real `cs` and `csd` processes, with no daemon running (help and a typo
never need csd)."""

import os
import subprocess
import sys

from csadmin import errors
from tests.harness import ROOT


def run(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
    env.update(PYTHONPATH=ROOT, CS_ENDPOINT="ipc:///nonexistent/csd.sock")
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, env=env, timeout=60, cwd=ROOT,
                          stdin=subprocess.DEVNULL)


def cs(*args: str) -> subprocess.CompletedProcess:
    return run("-m", "csadmin", *args)


def test_help_after_a_command_is_its_help():
    for flag in ("--help", "-h"):
        r = cs("system", "standby", flag)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("system standby — ") and "--force" in r.stdout and "--no-confirm" in r.stdout
        assert "system activate" not in r.stdout
    r = cs("system", "standby", "--force", "--help")  # options before it do not matter
    assert r.returncode == 0 and r.stdout.startswith("system standby — ")
    r = cs("system", "status", "--help")  # an alias answers with its command's help
    assert r.returncode == 0 and r.stdout.startswith("system show — ")


def test_help_after_a_group_lists_its_commands():
    r = cs("system", "--help")
    assert r.returncode == 0, r.stderr
    for name in ("system show", "system standby", "system activate", "system fault inject"):
        assert name in r.stdout
    assert "events show" not in r.stdout
    r = cs("system", "fault", "-h")
    assert r.returncode == 0 and "system fault clear" in r.stdout and "system standby" not in r.stdout
    r = cs("help", "system", "fault", "--help")
    assert r.returncode == 0 and "system fault list" in r.stdout


def test_help_of_something_unknown_is_a_usage_error_with_a_suggestion():
    r = cs("system", "stanby", "--help")
    assert r.returncode == errors.EXIT_USAGE
    assert "Did you mean `system standby`?" in r.stderr


def test_cs_help_lists_the_exit_codes_and_no_exit_command():
    r = cs("--help")
    assert r.returncode == 0
    assert "exit codes:" in r.stdout
    for code, _ in errors.EXIT_CODES:
        assert f"\n  {code:<3}  " in r.stdout
    assert "Leave the shell" not in r.stdout and "\n  exit " not in r.stdout
    r = cs("help")  # one-shot `cs help` lists the same commands
    assert r.returncode == 0 and "Leave the shell" not in r.stdout
    assert cs("exit").returncode == 0  # nothing to leave, nothing wrong


def test_mistyped_subcommand_gets_a_suggestion():
    r = cs("system", "stanby")
    assert r.returncode == errors.EXIT_USAGE
    assert "`system` has no command `stanby`" in r.stderr
    assert "Did you mean `system standby`?" in r.stderr
    r = cs("system", "fault", "injct", "temperature-high-warn")
    assert r.returncode == errors.EXIT_USAGE
    assert "Did you mean `system fault inject`?" in r.stderr
    r = cs("sytem", "show")  # top level, as before
    assert "Did you mean `system`?" in r.stderr
    r = cs("system")  # a group alone is still incomplete, and says what may follow
    assert r.returncode == errors.EXIT_USAGE and "Incomplete command `system`" in r.stderr


def test_csd_help_mentions_keys_and_keys_init_help_shows_state_dir():
    r = run("-m", "csadmin.daemon", "--help")
    assert r.returncode == 0, r.stderr
    assert "csd keys init" in r.stdout and "csd keys add" in r.stdout
    r = run("-m", "csadmin.daemon", "keys", "init", "--help")
    assert r.returncode == 0, r.stderr
    assert "--state-dir" in r.stdout and "state directory" in r.stdout
    r = run("-m", "csadmin.daemon", "keys", "add", "--help")
    assert "--state-dir" in r.stdout


def test_cs_help_lists_every_global_option_main_parses():
    from csadmin.cli.commands import GLOBAL_OPTIONS

    text = cs("--help").stdout
    for option in GLOBAL_OPTIONS:
        assert f"\n  {option.name}" in text, option.name


def test_the_shell_offers_exit_and_answers_help_flags(term):
    term.send("help\r")
    term.wait_text("Leave the shell.")
    term.send("system standby --help\r")
    term.wait_text("Waits for PENDING_STANDBY to complete.")
    term.send("system stanby\r")
    term.wait_text("Did you mean `system standby`?")
