"""The shell loop driven through prompt_toolkit's pipe input and DummyOutput (its own testing
recipe), against a real csd. Commands print straight to stdout (captured by pytest)."""

import pytest
from prompt_toolkit.application import create_app_session
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from csadmin.main import GlobalOptions
from csadmin.shell.app import announce_line, run_shell


@pytest.fixture
def shell(csd, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))

    class Shell:
        def run(self, keys: str) -> int:
            """Type `keys`, then Ctrl-D (the pipe stays open, so without it the prompt would wait)."""
            with create_pipe_input() as inp, create_app_session(input=inp, output=DummyOutput()):
                inp.send_text(keys + "\x04")
                with csd.client() as client:
                    return run_shell(client, GlobalOptions(), watch=False)

    return Shell()


def test_commands_run_in_order_and_eof_leaves_with_0(shell, capsys):
    assert shell.run("config execmode show\nsystem show\n") == 0
    out = capsys.readouterr().out
    assert "Configured Execution Mode : PIPELINED" in out
    assert out.index("Configured Execution Mode") < out.index("systemHealth   : OK")


def test_an_error_does_not_end_the_shell(shell, capsys):
    assert shell.run("sytem show\nsystem show\nexit\n") == 0
    captured = capsys.readouterr()
    assert "Unknown command `sytem`" in captured.err and "Did you mean `system`?" in captured.err
    assert "systemHealth" in captured.out


def test_history_is_kept_in_the_xdg_state_dir(shell, tmp_path):
    shell.run("system show\nquit\n")
    assert "system show" in (tmp_path / "csadmin" / "history").read_text()


def test_help_lists_the_table(shell, capsys):
    shell.run("help\nhelp config execmode setup\n")
    out = capsys.readouterr().out
    for name in ("system show", "system standby", "events follow", "whoami", "config execmode setup"):
        assert name in out
    assert "--mode MODE" in out


def test_announce_line_names_who_caused_the_event():
    event = {"seq": 3, "type": "EventStandbyIssued", "severity": "INFO", "triggerTime": 0,
             "details": {"by": {"name": "alice", "session": "s1"}}}
    assert announce_line(event).startswith("» ") and announce_line(event).endswith("(by alice)")
