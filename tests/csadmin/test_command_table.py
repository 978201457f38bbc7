"""The console's command table (csadmin/cli/commands.py) holds each command's action itself, so
a reader or a tool follows `cs system standby` to the client and csd's op with no name looked up."""

from csadmin.cli import actions, commands, fleet_actions, fleet_rolling
from csadmin.cli.commands import COMMANDS


def test_every_command_holds_the_function_that_carries_it_out():
    for command in COMMANDS:
        assert callable(command.action), command.name
        # The action modules: one system's commands, and the fleet's (several systems each).
        modules = (actions.__name__, commands.__name__, fleet_actions.__name__, fleet_rolling.__name__)
        assert command.action.__module__ in modules, command.name


def test_help_takes_a_command_and_nothing_else_does():
    assert [c.name for c in COMMANDS if c.takes_command] == ["help"]
