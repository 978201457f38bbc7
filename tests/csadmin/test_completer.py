"""Completion of the grammar, without a terminal."""

import pytest
from prompt_toolkit.document import Document

from csadmin.cli import sources
from csadmin.shell.completer import CommandCompleter, candidates


def live(values: dict):
    """What the shell fetches for each source the table names (only those in `values`)."""
    return lambda source: values.get(source, [])


@pytest.mark.parametrize(
    "line, expected",
    [
        ("", ["audit", "config", "events", "exit", "fleet", "help", "inventory", "quit", "runs", "slurm", "system",
              "use", "whoami"]),
        ("runs ", ["abort", "list", "show"]),
        ("sys", ["system"]),
        ("fleet ", ["events", "execmode", "show"]),
        ("fleet execmode setup --mode ", ["PIPELINED", "WEIGHT_STREAMING", "pipelined", "weight-streaming"]),
        ("system ", ["activate", "date", "fault", "show", "standby", "status"]),
        ("system fault ", ["clear", "inject", "list", "scenario"]),
        ("system st", ["standby", "status"]),
        ("config ", ["execmode"]),
        ("config execmode ", ["setup", "show"]),
        ("events ", ["follow", "show"]),
        ("help sys", ["system"]),
        ("help system ", ["activate", "date", "fault", "show", "standby", "status"]),
        ("slurm ", ["epilog", "features", "health-check", "prolog", "reboot", "set-feature"]),
        ("nonsense ", []),
    ],
)
def test_command_words(line, expected):
    assert candidates(line)[1] == expected


def test_options_of_the_command_not_yet_used():
    assert candidates("config execmode setup ")[1] == ["--mode", "--no-confirm", "--output-format"]
    assert candidates("config execmode setup --no-confirm --")[1] == ["--mode", "--output-format"]
    assert candidates("system show --d")[1] == ["--detailed"]
    assert candidates("system standby ")[1] == ["--no-confirm", "--force", "--output-format"]


def test_fault_names_complete_from_the_catalogue_csd_sends():
    names = live({sources.FAULT_NAMES: ["psu-hardware-error", "pump-missing", "temperature-high-warn"]})
    assert candidates("system fault inject p", names)[1] == ["psu-hardware-error", "pump-missing"]
    assert candidates("system fault clear t", names)[1] == ["temperature-high-warn"]
    assert candidates("system fault inject psu-hardware-error --f", names)[1] == ["--for"]


def test_option_values():
    assert candidates("config execmode setup --mode ")[1] == ["PIPELINED", "WEIGHT_STREAMING", "pipelined", "weight-streaming"]
    assert candidates("config execmode setup --mode W")[1] == ["WEIGHT_STREAMING"]
    assert candidates("system show --output-format ")[1] == ["text", "json"]


def test_live_values_come_from_the_provider():
    providers = live({sources.EVENT_TYPES: ["EventActivateIssued", "EventActivateCompleted", "EventStandbyIssued"]})
    assert candidates("events show --event-type EventAct", providers)[1] == ["EventActivateIssued", "EventActivateCompleted"]
    assert candidates("events follow --event-type ", providers)[1][-1] == "EventStandbyIssued"


def test_run_ids_complete_the_positional_then_options():
    providers = live({sources.RUN_IDS: ["run-000002", "run-000001"]})
    assert candidates("runs show ", providers)[1] == ["run-000002", "run-000001", "--output-format"]
    assert candidates("runs show run-0000", providers)[1] == ["run-000002", "run-000001"]
    assert candidates("runs abort --reason late ", providers)[1][:2] == ["run-000002", "run-000001"]
    assert candidates("runs show run-000001 ", providers)[1] == ["--output-format"]


def test_a_failing_provider_gives_no_completions_instead_of_an_error():
    def broken(source):
        raise RuntimeError("daemon gone")

    assert candidates("events show --event-type E", broken)[1] == []


def test_completer_replaces_the_current_word_and_adds_a_space():
    completions = list(CommandCompleter().get_completions(Document("who"), None))
    assert [(c.text, c.start_position) for c in completions] == [("whoami ", -3)]


def test_each_positional_names_its_source_by_reference():
    def fetched(source):
        return {sources.RUN_IDS: ["run-000001"], sources.FAULT_NAMES: ["pump-missing"],
                sources.SYSTEM_NAMES: ["lab-a"]}[source]

    assert candidates("runs abort ", fetched)[1][0] == "run-000001"
    assert candidates("system fault clear ", fetched)[1][0] == "pump-missing"
    assert candidates("use ", fetched)[1] == ["lab-a"]
    assert candidates("slurm set-feature ", fetched)[1] == ["--wait"]  # FEATURE has no live source
