"""What each command does, given an ActionContext and its parsed line; each returns an exit code.

Actions talk to the daemon only through `csadmin.client` (one typed method per csd operation)
and to people only through the context's console, so one-shot, script and shell use share every
line here. The command table (commands.py) names each command's action.
"""

from __future__ import annotations

from types import ModuleType
from typing import Callable

from .. import errors
from ..shared.states import ExecMode, title
from . import render
from .action_context import ActionContext
from .checks import scenario_text
from .grammar import Parsed


def _preflight(s: ActionContext, p: Parsed, dry_run: Callable[[], dict]) -> dict | None:
    """Before asking: check the request on csd without doing it (`dry_run`: role, arguments,
    state), so a change that cannot happen is refused, and one with nothing to do is reported,
    before anyone is asked. None: no question will be asked (--no-confirm), go ahead. (Without
    --no-confirm and no one to ask, parse.check refused the line before it got here.)"""
    if p.options.get("no_confirm"):
        return None
    return dry_run()


CANCELLED = "Cancelled; nothing was changed."


def _confirm(s: ActionContext, question: str) -> None:
    if not s.console.confirm(question):
        raise errors.Cancelled(CANCELLED)


def _settle(s: ActionContext, p: Parsed, result: dict, target: str) -> int:
    """Wait for a started transition to complete, showing progress; print the outcome."""
    as_json = s.json(p)
    if result["changed"]:
        try:
            snap = _wait(s, result, target, as_json)
        except KeyboardInterrupt:  # csd accepted the change: only our waiting stops
            raise errors.Interrupted(f"Stopped waiting; the system carries on to {target}.",
                                     "Follow it with `events follow`, or see where it is with `system show`.") from None
        message = f"System is ACTIVE in {snap['activeExecmode']}." if target == "ACTIVE" else "System is in STANDBY."
    else:
        snap = s.client.system_show()
        message = result["message"]
    if as_json:
        s.console.out(s.as_json({"message": message, "changed": result["changed"], "system": snap}))
    else:
        s.console.out(message)
    return errors.EXIT_OK


def _wait(s: ActionContext, result: dict, target: str, as_json: bool) -> dict:
    """Say the transition started, then wait for `target` showing the time left; csd's snapshot."""
    snap = s.client.system_show()
    left = render.seconds_left(snap) or 0.0
    if not as_json:
        s.console.out(f"{result['message'].rstrip('.')} ({snap['state']}, about {left:.1f} s)…")

    def progress(snap: dict) -> None:
        remaining = render.seconds_left(snap)
        if remaining is not None and not as_json:
            s.console.progress(f"{snap['state']}: about {remaining:.1f} s left")

    return s.client.wait_for(state=target, timeout=left + s.timeout, on_progress=progress)


def _answer(s: ActionContext, p: Parsed, result: dict, as_text: Callable[[dict], str]) -> int:
    """Print what csd answered: as JSON (stable keys, docs/cli.md) or as text for people."""
    s.console.out(s.as_json(result) if s.json(p) else as_text(result))
    return errors.EXIT_OK


def op_args(p: Parsed) -> dict:
    """The op's arguments a command line gives: each option and positional argument that names
    one (Option.op_arg, Argument.op_arg; the console's own options name none), left out when not
    given, so csd applies its default."""
    takes = p.command.op.args
    args = {o.op_arg: p.options[o.dest] for o in p.command.options if o.op_arg in takes}
    args.update((a.op_arg, value) for a, value in zip(p.command.arguments, p.args) if a.op_arg)
    return {k: v for k, v in args.items() if v is not None and v is not False}


def ask(s: ActionContext, p: Parsed) -> int:
    """The action of a command that is its op and nothing more (the table row names the op):
    send it with the line's arguments and print the reply: its `message`, or its keys one a
    line (JSON with --output-format json). A change is checked first (a dry run, when the op
    takes one) and confirmed with its message unless --no-confirm."""
    args = op_args(p)
    if p.command.changes_state and not p.options.get("no_confirm"):
        question = f"`{p.command.name}` changes the system."
        if p.command.op.dry_run:  # refused, or nothing to do: said before anyone is asked
            check = s.client.call(p.command.op, **args, dry_run=True)
            if not check["changed"]:
                return _answer(s, p, check, lambda r: r["message"])
            question = check["message"]
        _confirm(s, f"{question} Do you want to proceed?")
    return _answer(s, p, s.client.call(p.command.op, **args), render.reply)


def system_show(s: ActionContext, p: Parsed) -> int:
    return _answer(s, p, s.client.system_show(detailed=p.options["detailed"]),
                   lambda r: render.system_show(r, s.console.paint))


def system_standby(s: ActionContext, p: Parsed) -> int:
    force = bool(p.options.get("force"))
    check = _preflight(s, p, lambda: s.client.system_standby(force=force, dry_run=True))
    if check is not None:
        if not check["changed"]:
            return _settle(s, p, check, "STANDBY")
        aborting = ""
        if force:
            holder = s.client.system_show().get("runHolder")
            aborting = (
                f" Run {holder['runId']} (owner {holder['owner']}) holding the fabric will be aborted."
                if holder else " Any run holding the fabric will be aborted."
            )
        _confirm(s, f"This puts the system in standby.{aborting} Do you want to proceed?")
    return _settle(s, p, s.client.system_standby(force=force), "STANDBY")


def system_activate(s: ActionContext, p: Parsed) -> int:
    check = _preflight(s, p, lambda: s.client.system_activate(dry_run=True))
    if check is not None:
        if not check["changed"]:
            return _settle(s, p, check, "ACTIVE")
        mode = s.client.execmode_show()["execmode"]
        _confirm(s, f"This activates the system in {title(mode)} mode. Do you want to proceed?")
    return _settle(s, p, s.client.system_activate(), "ACTIVE")


def fault_inject(s: ActionContext, p: Parsed) -> int:
    name, for_s, after_s = p.args[0], p.options["for"], p.options["after"]

    def inject(dry_run: bool = False) -> dict:
        return s.client.fault_inject(name, for_seconds=for_s, after_seconds=after_s, dry_run=dry_run)

    check = _preflight(s, p, lambda: inject(dry_run=True))
    if check is not None and check["changed"]:
        _confirm(s, f"{check['message']} Runtimes will see it (its events say `injected`). Do you want to proceed?")
    return _answer(s, p, inject(), lambda r: render.fault_changed(r, s.console.paint))


def fault_clear(s: ActionContext, p: Parsed) -> int:
    everything = bool(p.options.get("all"))
    name = None if everything else p.args[0]
    check = _preflight(s, p, lambda: s.client.fault_clear(name, all=everything, dry_run=True))
    if check is not None:
        if not check["changed"]:
            return _answer(s, p, check, lambda r: render.fault_changed(r, s.console.paint))
        _confirm(s, f"{check['message']} Do you want to proceed?")
    return _answer(s, p, s.client.fault_clear(name, all=everything), lambda r: render.fault_changed(r, s.console.paint))


def fault_list(s: ActionContext, p: Parsed) -> int:
    return _answer(s, p, s.client.fault_list(), lambda r: render.fault_list(r, s.console.paint))


def fault_scenario(s: ActionContext, p: Parsed) -> int:
    path = p.args[0]
    text = scenario_text(path)
    source = path.rsplit("/", 1)[-1]
    check = _preflight(s, p, lambda: s.client.fault_scenario(text, source=source, dry_run=True))
    if check is not None:
        steps = "".join(f"\n  {step}" for step in check["steps"])
        _confirm(s, f"This loads scenario {source}, replacing any loaded before:{steps}\nDo you want to proceed?")
    result = s.client.fault_scenario(text, source=source)
    return _answer(s, p, result, lambda r: "\n".join([r["message"], *(f"  {step}" for step in r["steps"])]))


def execmode_show(s: ActionContext, p: Parsed) -> int:
    return _answer(s, p, s.client.execmode_show(), render.execmode_show)


def execmode_setup(s: ActionContext, p: Parsed) -> int:
    mode = p.options["mode"]
    if mode is None:
        # Checked before offering the choice (the rule and its message live in csd, once).
        configured = s.client.execmode_show()["execmode"]
        s.client.execmode_setup(configured, dry_run=True)
        options = [(m.value, m.title) for m in ExecMode]
        mode = s.console.choose("Select execution mode configuration:", options, default=configured)
        if mode is None:  # Ctrl-C in the menu: as "no" at a question
            raise errors.Cancelled(CANCELLED)
    else:
        check = _preflight(s, p, lambda: s.client.execmode_setup(mode, dry_run=True))
        if check is not None and check["changed"]:
            _confirm(s, f"This sets the execution mode to {title(check['execmode'])} "
                        f"(taking effect on `system activate`). Do you want to proceed?")
    result = s.client.execmode_setup(mode)
    if s.json(p):
        s.console.out(s.as_json(result))
        return errors.EXIT_OK
    s.console.out(f"Selected execution mode configuration: ✔ {title(result['execmode'])}")
    if result["changed"]:
        s.console.out("It takes effect on `system activate`.")
    else:
        s.console.out(result["message"])
    return errors.EXIT_OK


def events_show(s: ActionContext, p: Parsed) -> int:
    o = p.options
    events = s.client.events_show(event_type=o["event_type"], from_time=o["from_time"], max_count=o["max_count"])
    return _answer(s, p, {"events": events}, lambda r: render.events(r["events"], s.console.paint))


def runs_list(s: ActionContext, p: Parsed) -> int:
    return _answer(s, p, s.client.runs_list(max_count=p.options["max_count"]), render.runs_list)


def runs_show(s: ActionContext, p: Parsed) -> int:
    return _answer(s, p, s.client.runs_show(p.args[0]), render.run_show)


def runs_abort(s: ActionContext, p: Parsed) -> int:
    run_id, reason = p.args[0], p.options["reason"]
    # Unknown or closed: refused before anyone is asked.
    check = _preflight(s, p, lambda: s.client.runs_abort(run_id, reason=reason, dry_run=True))
    if check is not None:
        if not check["changed"]:
            return _answer(s, p, check, lambda r: r["message"])
        _confirm(s, f"This aborts run {run_id} (owner {check['owner']}); its runtime will get RUN_ABORTED. "
                    "Do you want to proceed?")
    result = s.client.runs_abort(run_id, reason=reason)
    return _answer(s, p, result, lambda r: r["message"])


def audit_show(s: ActionContext, p: Parsed) -> int:
    entries = s.client.audit_show(max_count=p.options["max_count"])
    return _answer(s, p, {"entries": entries}, lambda r: render.audit(r["entries"]))


def system_date(s: ActionContext, p: Parsed) -> int:
    result = s.client.system_date()
    return _answer(s, p, result, lambda r: render.fmt_ms(r["time"]) + " " + render.local_zone())


def whoami(s: ActionContext, p: Parsed) -> int:
    me = s.client.whoami()
    return _answer(s, p, me, lambda r: f"{r['name']} ({r['role']}), session {r['session']}")


def slurm_hook(pick: Callable[[ModuleType], Callable[..., int]]) -> Callable[[ActionContext, Parsed], int]:
    """The action of a `slurm …` command: the hook `pick` takes from csadmin/slurm/hooks.py
    (`slurm_hook(lambda hooks: hooks.prolog)`), a reference resolved when the command runs, so
    that module loads only for Slurm's scripts, never for another one-shot `cs`."""

    def action(s: ActionContext, p: Parsed) -> int:
        from ..slurm import hooks

        return hooks.run_hook(s.client, pick(hooks), " ".join(p.command.words[1:]), p.options, p.args)

    return action


def events_follow(s: ActionContext, p: Parsed) -> int:
    """Print live events until Ctrl-C (which ends it with success). None after the start is
    skipped: what the subscription missed is fetched from the kept log (csadmin/clientlib/follow.py)."""
    import fnmatch

    pattern = p.options["event_type"]
    as_json = s.json(p)
    with s.client.follow() as stream:
        s.console.err("Following events; Ctrl-C stops.")
        try:
            while True:
                for e in stream.next():
                    if pattern is None or fnmatch.fnmatchcase(e["type"], pattern):
                        s.console.out(render.compact_json(e) if as_json else render.event_line(e, s.console.paint))
        except KeyboardInterrupt:
            s.console.err("Stopped following events.")  # on its own line, after the terminal's ^C
    return errors.EXIT_OK
