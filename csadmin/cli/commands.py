"""The command table: every `cs` command, defined once, as plain data (grammar.py).

Parsing (parse.py), help, shell completion, one-shot and interactive use all read this table;
`action` is the function that carries the command out (actions.py; `help` and `exit`, which
are about the table and the shell rather than csd, are here; help's text is help.py's). So `cs system standby` reads, with
no string looked up: COMMANDS → actions.system_standby → Client.system_standby → the op
`system.standby` (daemon/commands/system_standby.py).
"""

from __future__ import annotations

from .. import errors
from ..shared import ops
from ..shared.states import EXECMODE_SPELLINGS, ExecMode
from . import actions, checks, fleet_actions, fleet_rolling, sources
from .action_context import ActionContext
from .grammar import Argument, Command, Option, Parsed

NO_CONFIRM = Option("--no-confirm", "do not ask for confirmation (required in scripts)")
OUTPUT_FORMAT = Option("--output-format", "text (default) or json", True, "FORMAT", ("text", "json"), choices=True)

# `cs`'s own options, before any command (csadmin/main.py parses them; `cs --help` explains them).
GLOBAL_OPTIONS = (
    Option("--system", "a system of the inventory (default: $CS_SYSTEM); `cs inventory` lists them", True, "NAME"),
    Option("--connect", "csd's connection file (default: $CS_CONNECT, else csd.json in csd's runtime dir)", True, "FILE"),
    Option("--key", "your secret key file from `csd keys add` (default: $CS_KEY, else ~/.config/cs/client.key_secret)",
           True, "FILE"),
    Option("--endpoint", "csd request socket (default: $CS_ENDPOINT or the connection file's)", True, "URL"),
    Option("--server-key", "csd's public key, for an --endpoint without a connection file ($CS_SERVER_KEY)", True,
           "KEY"),
    Option("--timeout", "seconds to wait for an answer, and past a transition's expected end (default 10)", True, "S"),
    OUTPUT_FORMAT,
    Option("-c", "run these commands (separated by ';' or newlines) and exit", True, "CMDS"),
    Option("--embedded", "start a private csd in a temp dir and use it (stopped on exit)"),
    Option("--version", "print the version and exit"),
    Option("--help", "print this help and exit"),
)


EVENT_TYPE = Option(
    "--event-type", "glob on the event type, e.g. 'EventActivate*'", True, "GLOB", complete_from=sources.EVENT_TYPES
)

# The fleet commands' choice of systems (the inventory: csadmin/clientlib/inventory.py, README "Several systems").
FLEET_TAG = Option("--tag", "only systems with this tag (a,b: with each of them)", True, "TAG")
FLEET_SYSTEMS = Option("--systems", "these systems, in this order (comma-separated names)", True, "A,B,…",
                       complete_from=sources.SYSTEM_NAMES)

RUN_ID = Argument("ID", "run_id", sources.RUN_IDS)

SLURM_JOB_ID = Option("--job-id", "Slurm's job id (default $SLURM_JOB_ID)", True, "ID")
SLURM_NODE = Option("--node", "this node's Slurm name (default $SLURMD_NODENAME)", True, "NAME")


def _slurm_wait(waits_for: str, default: int, bound: str) -> Option:
    return Option("--wait", f"seconds to wait for {waits_for} (default {default}; keep it below {bound})", True, "S",
                  integer=True)


# -- the commands about the table and the shell ----------------------------------------------------


class ExitShell(Exception):
    """Raised by `exit` / `quit`; the shell ends with exit code 0."""


def show_help(s: ActionContext, p: Parsed) -> int:
    from .help import help_data, help_text  # only for `help`: not on every one-shot's path

    if s.json(p):
        s.console.out(s.as_json({"commands": help_data(COMMANDS, options_of, p.args, in_shell=s.console.in_shell)}))
    else:
        s.console.out(help_text(COMMANDS, options_of, p.args, in_shell=s.console.in_shell))
    return errors.EXIT_OK


def leave(s: ActionContext, p: Parsed) -> int:
    raise ExitShell()


COMMANDS: tuple[Command, ...] = (
    Command(
        ("system", "show"), "Show the system's state, health and execution mode.", actions.system_show,
        options=(Option("--detailed", "also show the daemon's version, start time and durations"),),
        aliases=(("system", "status"),), reads=True, op=ops.SYSTEM_SHOW,
    ),
    Command(
        ("system", "standby"), "Put the system in standby (ACTIVE → STANDBY).", actions.system_standby,
        options=(NO_CONFIRM, Option("--force", "abort the run holding the fabric instead of refusing")),
        changes_state=True, op=ops.SYSTEM_STANDBY,
        details="Waits for PENDING_STANDBY to complete. Admins only. Refused (busy, exit 4) while a run "
                "holds the fabric, unless --force, which aborts that run.",
    ),
    Command(
        ("system", "activate"), "Activate the system in the configured execution mode (STANDBY → ACTIVE).",
        actions.system_activate, options=(NO_CONFIRM,), changes_state=True, op=ops.SYSTEM_ACTIVATE,
        details="The system reboots into the configured execution mode; waits for PENDING_ACTIVE to complete.",
    ),
    Command(("system", "date"), "Show the system's date and time.", actions.system_date, reads=True, op=ops.SYSTEM_DATE),
    # Simulated faults (docs/cli.md, "Faults"): every event they cause says `injected`.
    Command(
        ("system", "fault", "inject"), "Inject a simulated fault (admins only).", actions.fault_inject,
        options=(
            Option("--for", "it clears this many seconds after it is injected", True, "S", number=True,
                   arg="for_seconds"),
            Option("--after", "inject it this many seconds from now", True, "S", number=True, arg="after_seconds"),
            NO_CONFIRM,
        ),
        changes_state=True, arguments=(Argument("NAME", "name", sources.FAULT_NAMES),),
        op=ops.SYSTEM_FAULT_INJECT,
        details="NAME is one of `system fault list`'s catalogue. A warning makes systemHealth DEGRADED; a critical "
                "fault aborts the run holding the fabric and refuses new runs; emergency-shutdown drops to STANDBY; "
                "a transition fault makes the next activate/standby/execmode change fail or time out.",
    ),
    Command(
        ("system", "fault", "clear"), "Clear a fault, or every fault with --all (admins only).", actions.fault_clear,
        options=(Option("--all", "every fault, and the loaded scenario's steps still to come"), NO_CONFIRM),
        changes_state=True, arguments=(Argument("[NAME]", "name", sources.FAULT_NAMES),),
        op=ops.SYSTEM_FAULT_CLEAR,
        check=checks.fault_clear,
        details="Clearing the last active fault emits EventHealthOk. After emergency-shutdown, activate the system.",
    ),
    Command(("system", "fault", "list"), "Show the faults present, the scenario, and the faults that can be injected.",
            actions.fault_list, reads=True, op=ops.SYSTEM_FAULT_LIST),
    Command(
        ("system", "fault", "scenario"), "Load a fault scenario file (TOML) into csd (admins only).",
        actions.fault_scenario, options=(NO_CONFIRM,), changes_state=True, arguments=(Argument("FILE", "text"),),
        op=ops.SYSTEM_FAULT_SCENARIO, check=checks.fault_scenario,
        details="It replaces the scenario loaded before. docs/operations.md, \"Fault scenarios\", describes the file.",
    ),
    Command(("config", "execmode", "show"), "Show the configured execution mode.", actions.execmode_show, reads=True,
            op=ops.CONFIG_EXECMODE_SHOW),
    Command(
        ("config", "execmode", "setup"), "Choose the execution mode the next activation boots into (STANDBY only).",
        actions.execmode_setup,
        options=(
            Option("--mode", "PIPELINED or WEIGHT_STREAMING (any case; weight-streaming)", True, "MODE", EXECMODE_SPELLINGS,
                   parse=ExecMode.parse),
            NO_CONFIRM,
        ),
        changes_state=True, op=ops.CONFIG_EXECMODE_SETUP, check=checks.execmode_setup,
        details="Without --mode, offers the two modes as a selection. Takes effect on `system activate`.",
    ),
    Command(
        ("events", "show"), "Show kept events, oldest first.", actions.events_show,
        options=(
            EVENT_TYPE,
            Option("--from-time", "only events at or after this time (ms since the epoch)", True, "MS", integer=True),
            Option("--max-count", "only the newest N matching events", True, "N", integer=True),
        ),
        reads=True, op=ops.EVENTS_SHOW,
    ),
    Command(
        ("events", "follow"), "Print events as they happen, until Ctrl-C.", actions.events_follow,
        options=(EVENT_TYPE,), reads=True, op=ops.EVENTS_SHOW,
        details="With --output-format json, one JSON object per line.",
    ),
    Command(("whoami",), "Show who csd takes you for: key name, role and session.", actions.whoami, reads=True,
            op=ops.META_WHOAMI),
    Command(
        ("runs", "list"), "List the kept runs, newest first, and the run holding the fabric.", actions.runs_list,
        options=(Option("--max-count", "only the newest N runs", True, "N", integer=True),), reads=True, op=ops.RUNS_LIST,
    ),
    Command(("runs", "show"), "Show one run and its performance record.", actions.runs_show, reads=True,
            arguments=(RUN_ID,), op=ops.RUNS_SHOW),
    Command(
        ("runs", "abort"), "Abort a run, releasing the fabric (admins only).", actions.runs_abort,
        options=(NO_CONFIRM, Option("--reason", "why, shown to the run's runtime", True, "TEXT")),
        changes_state=True, arguments=(RUN_ID,), op=ops.RUNS_ABORT,
        details="The run's runtime gets RUN_ABORTED with the reason on its next call.",
    ),
    Command(
        ("audit", "show"), "Show the audit log: every change requested and every denial, oldest first.", actions.audit_show,
        options=(Option("--max-count", "only the newest N records (default 100)", True, "N", integer=True),),
        reads=True, op=ops.AUDIT_SHOW, details="Admins only.",
    ),
    # Several systems (README, "Several systems"): the inventory, and commands across it.
    Command(("inventory",), "List the systems of the inventory (* marks the one in use).", fleet_actions.inventory,
            reads=True, details="The inventory is $CS_INVENTORY, else ~/.config/cs/systems.toml, else "
                                "/etc/cs/systems.toml. `cs --system NAME COMMAND` (or $CS_SYSTEM) addresses one."),
    Command(("use",), "Switch the shell to another system of the inventory.", fleet_actions.use,
            arguments=(Argument("SYSTEM", complete_from=sources.SYSTEM_NAMES),), output=False,
            details="The prompt and the toolbar name the system in use. One-shot: `cs --system NAME COMMAND`."),
    Command(
        ("fleet", "show"), "Show every system at once: state, health, modes, run holder, Slurm job, round trip.",
        fleet_actions.fleet_show,
        options=(FLEET_TAG, FLEET_SYSTEMS, Option("--deadline", "seconds each system may take to answer (default 3)",
                                                  True, "S")),
        reads=True,
        details="All systems are asked at once: one that is down or slow costs its deadline once. Exit 0 when "
                "every system answered, 7 when one did not.",
    ),
    Command(
        ("fleet", "events", "follow"), "Print every system's events as they happen, tagged, until Ctrl-C.",
        fleet_actions.fleet_events_follow, options=(FLEET_TAG, FLEET_SYSTEMS, EVENT_TYPE), reads=True,
        details="Gaps are filled per system from its csd's log; a system that stops answering is reported, and "
                "followed on from where it stopped when it answers again. JSON: one object per line with `system`.",
    ),
    Command(
        ("fleet", "execmode", "setup"), "Switch systems' execution mode: standby, setup, activate, K at a time.",
        fleet_rolling.execmode_setup,
        options=(
            Option("--mode", "PIPELINED or WEIGHT_STREAMING (any case; weight-streaming)", True, "MODE",
                   EXECMODE_SPELLINGS),
            FLEET_SYSTEMS, FLEET_TAG,
            Option("--max-parallel", "at most K systems at once (default 1)", True, "K", integer=True),
            Option("--keep-going", "carry on after a system failed (default: start no more)"),
            Option("--force", "abort the run holding a fabric instead of skipping its system"),
            NO_CONFIRM,
        ),
        changes_state=True,
        details="Admins only. A system whose fabric is held (a run, a Slurm job) is skipped unless --force. Ctrl-C "
                "starts no more systems and lets the started ones finish. Ends with each system's outcome: "
                "done, skipped or failed, and why. Exit 0 only when every system is done.",
    ),
    # Slurm's scripts on a node with a CS-2 attached run these (docs/slurm.md, slurm/): no prompts,
    # a bounded runtime, exit codes Slurm understands; csadmin/slurm/hooks.py carries them out.
    Command(
        ("slurm", "health-check"), "HealthCheckProgram: drain the node while the CS-2 cannot take jobs.",
        actions.slurm_hook(lambda hooks: hooks.health_check),
        options=(SLURM_NODE,), output=False,
        details="Drains with a reason ending in '(cs health check)' unless the system is ACTIVE with systemHealth "
                "OK/DEGRADED in the mode Slurm has; resumes only nodes it drained itself.",
    ),
    Command(("slurm", "features"), "node_features/helpers: print the active mode's Slurm feature.",
            actions.slurm_hook(lambda hooks: hooks.features_show),
            output=False, details="cs2_pipelined or cs2_weight_streaming, on stdout."),
    Command(
        ("slurm", "set-feature"), "node_features/helpers: put the system in STANDBY configured for FEATURE's mode.",
        actions.slurm_hook(lambda hooks: hooks.features_set),
        options=(_slurm_wait("STANDBY", 40, "ExecTime in helpers.conf"),), arguments=(Argument("FEATURE"),),
        output=False,
        details="Refused (exit 4) while a run holds the fabric. `slurm reboot` (RebootProgram) then activates it.",
    ),
    Command(
        ("slurm", "reboot"), "RebootProgram: activate the system, then have slurmd report the reboot.",
        actions.slurm_hook(lambda hooks: hooks.reboot),
        options=(_slurm_wait("ACTIVE", 300, "ResumeTimeout in slurm.conf"),), output=False,
        details="The host does not reboot: slurmd is restarted with -b once the CS-2 is ACTIVE.",
    ),
    Command(
        ("slurm", "prolog"), "Prolog: wait for ACTIVE in the job's mode; give the wafer to the job.",
        actions.slurm_hook(lambda hooks: hooks.prolog),
        options=(
            SLURM_JOB_ID, Option("--user", "the job's user (default $SLURM_JOB_USER)", True, "USER"),
            Option("--constraint", "the job's constraint (default $SLURM_JOB_CONSTRAINTS)", True, "EXPR"),
            _slurm_wait("ACTIVE in the job's mode", 120, "PrologEpilogTimeout in slurm.conf, if set"), SLURM_NODE,
        ),
        output=False,
        details="Runs opened while the job holds the wafer carry its id. On failure drains the node with the reason.",
    ),
    Command(("slurm", "epilog"), "Epilog: abort the run the job left holding the fabric.",
            actions.slurm_hook(lambda hooks: hooks.epilog),
            options=(SLURM_JOB_ID,), output=False, details="Its reason: 'slurm job J ended'."),
    Command(("help",), "Show the commands, or one command's options: help [COMMAND].", show_help,
            takes_command=True),
    Command(("exit",), "Leave the shell.", leave, aliases=(("quit",),), output=False, shell_only=True),
)


def all_names() -> dict[tuple[str, ...], Command]:
    """Every spelling (name and aliases) of every command."""
    table = {}
    for command in COMMANDS:
        table[command.words] = command
        for alias in command.aliases:
            table[alias] = command
    return table


def next_words(prefix: tuple[str, ...]) -> list[str]:
    """The words that may follow `prefix` in some command's name (or alias), sorted."""
    n = len(prefix)
    return sorted({words[n] for words in all_names() if len(words) > n and words[:n] == prefix})


def command_at(tokens: list[str]) -> tuple[Command | None, int]:
    """The command named by the longest run of leading `tokens`, and how many tokens name it."""
    table = all_names()
    for n in range(len(tokens), 0, -1):
        command = table.get(tuple(tokens[:n]))
        if command is not None:
            return command, n
    return None, 0


def options_of(command: Command) -> tuple[Option, ...]:
    return command.options + ((OUTPUT_FORMAT,) if command.output else ())

