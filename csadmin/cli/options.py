"""The options several `cs` commands share, and `cs`'s own global options, as plain data
(grammar.py's `Option` and `Argument`); the command table (commands.py) names them in its rows.
"""

from __future__ import annotations

from . import sources
from .grammar import Argument, Option

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


def slurm_wait(waits_for: str, default: int, bound: str) -> Option:
    return Option("--wait", f"seconds to wait for {waits_for} (default {default}; keep it below {bound})", True, "S",
                  integer=True)
