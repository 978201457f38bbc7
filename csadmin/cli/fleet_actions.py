"""The commands about the inventory and the fleet: `inventory`, `use NAME` (the shell),
`fleet show` and `fleet events follow` (`fleet execmode setup` is fleet_rolling.py).

Each system is reached with its own client (csadmin/fleet/connect.py), never through the
action context's: its client stays on the one system commands address.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import errors
from . import render
from .action_context import ActionContext
from .grammar import Parsed

if TYPE_CHECKING:
    from ..clientlib.inventory import System

# The inventory and csadmin/fleet/ (threads, queues, TOML) are imported by the commands that use
# them: this module is loaded with the command table by every one-shot `cs`.

DEFAULT_DEADLINE = 3.0  # seconds a system may take to answer `fleet show`


def selected(p: Parsed) -> list[System]:
    """The systems a fleet command addresses: --systems a,b (in that order), else every system
    in the inventory; with --tag t[,u], only those tagged with each. NotFound if none is left."""
    from ..clientlib.inventory import load

    inv = load()
    names = _list(p.options.get("systems"))
    tags = _list(p.options.get("tag"))
    chosen = inv.select(names, tags)
    if not chosen:
        where = f" tagged {', '.join(tags)}" if tags else ""
        raise errors.NotFound(f"No system{where} in the inventory {inv.path}.", "`cs inventory` lists them and their tags.")
    return chosen


def _list(value: str | None) -> list[str]:
    if value is None:
        return []
    items = [v.strip() for v in value.split(",")]
    if not all(items):
        raise errors.UsageError(f"{render.shown(value)!r} has an empty name.", "Separate names with single commas: a,b,c.")
    return items


def inventory(s: ActionContext, p: Parsed) -> int:
    from ..clientlib.inventory import load

    from . import fleet_render

    inv = load()
    if s.json(p):
        s.console.out(render.as_json(fleet_render.systems_json(inv, s.system)))
    else:
        s.console.out(fleet_render.systems(inv, s.system))
    return errors.EXIT_OK


def use(s: ActionContext, p: Parsed) -> int:
    """Point the shell at another system of the inventory (checked to answer first)."""
    if s.switch_system is None:
        raise errors.UsageError("`use` switches the shell to another system.",
                                "For one command, use `cs --system NAME COMMAND` (or set CS_SYSTEM).")
    from ..fleet.connect import client_for
    from ..clientlib.inventory import load

    system = load().find(p.args[0])
    client = client_for(system, timeout=s.timeout, retries=2, default_key=s.key)
    try:
        snap = client.system_show()
    except BaseException:
        client.close()
        raise
    s.switch_system(system.name, client)
    s.console.out(f"Using {system.name}: {snap['serial']} {snap['state']} in {snap['activeExecmode']}, "
                  f"systemHealth {snap['systemHealth']}.")
    return errors.EXIT_OK


def _deadline(p: Parsed) -> float:
    value = p.options.get("deadline")
    if value is None:
        return DEFAULT_DEADLINE
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds <= 3600:
        raise errors.UsageError(f"--deadline needs a number of seconds above 0 (at most 3600), not {render.shown(value)!r}.")
    return seconds


def fleet_show(s: ActionContext, p: Parsed) -> int:
    from ..fleet.query import show_all

    from . import fleet_render

    answers = show_all(selected(p), _deadline(p), default_key=s.key)
    if s.json(p):
        s.console.out(render.as_json({
            "systems": [fleet_render.answer_json(a) for a in answers],
            "answered": sum(1 for a in answers if a.reachable), "total": len(answers),
        }))
    else:
        s.console.out(fleet_render.fleet_show(answers))
    # The status says whether every system answered (scripts: `cs fleet show || page-someone`).
    return errors.EXIT_OK if all(a.reachable for a in answers) else errors.EXIT_UNREACHABLE


def fleet_events_follow(s: ActionContext, p: Parsed) -> int:
    """Every selected system's events, tagged, until Ctrl-C (which ends it with success)."""
    import fnmatch

    from ..fleet.events import FleetEvents

    from . import fleet_render

    chosen = selected(p)
    pattern, as_json = p.options["event_type"], s.json(p)
    width = max(len(system.name) for system in chosen)
    with FleetEvents(chosen, timeout=min(s.timeout, 2.0), default_key=s.key) as fleet:
        s.console.err(f"Following events of {', '.join(x.name for x in chosen)}; Ctrl-C stops.")
        try:
            while True:
                for item in fleet.next():
                    if item.event is not None:
                        if pattern is None or fnmatch.fnmatchcase(item.event["type"], pattern):
                            s.console.out(render.compact_json({"system": item.system, **item.event}) if as_json
                                          else fleet_render.fleet_event(item.system, width, item.event))
                    elif as_json:
                        s.console.out(render.compact_json({"system": item.system, "status": item.status,
                                                           "message": item.message}))
                    else:
                        s.console.out(fleet_render.tagged(item.system, width, f"-- {item.status}: {item.message}"))
        except KeyboardInterrupt:
            s.console.err("Stopped following events.")
    return errors.EXIT_OK
