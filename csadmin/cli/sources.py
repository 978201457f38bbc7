"""Where the shell finds live completions (grammar.Source): the table's options and arguments
name these by reference, and the shell (csadmin/shell/) asks them at TAB.

csd's catalogues (event types, faults) come from csd, never from the model: the console does not
import it. They hold for the system in use (`kept`); the runs change, so they are asked each time.
"""

from __future__ import annotations

from .action_context import ActionContext
from .grammar import Source


def _event_types(s: ActionContext) -> list[str]:
    return s.client.hello().get("eventTypes", [])


def _run_ids(s: ActionContext) -> list[str]:
    return [run["runId"] for run in s.client.runs_list(max_count=50)["runs"]]


def _fault_names(s: ActionContext) -> list[str]:
    return [fault["name"] for fault in s.client.fault_list()["catalogue"]]


def _system_names(s: ActionContext) -> list[str]:
    from ..clientlib.inventory import load  # the inventory's TOML parser loads only when a system is completed

    return [system.name for system in load().systems]


EVENT_TYPES = Source(_event_types, kept=True)
RUN_IDS = Source(_run_ids)
FAULT_NAMES = Source(_fault_names, kept=True)
SYSTEM_NAMES = Source(_system_names)
