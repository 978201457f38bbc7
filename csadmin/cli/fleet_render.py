"""The fleet commands' output: for people (tables), and the JSON objects docs/cli.md lists."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .render import event_line

if TYPE_CHECKING:
    from ..fleet.query import Answer
    from ..fleet.switch import Outcome
    from ..clientlib.inventory import Inventory


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in (header, *rows))


def systems(inv: Inventory, current: str | None) -> str:
    rows = [(("* " if s.name == current else "  ") + s.name, s.target, ",".join(s.tags) or "-",
             s.key or "(default key)") for s in inv.systems]
    return f"Inventory {inv.path}:\n" + _table(("  SYSTEM", "CONNECTION", "TAGS", "KEY"), rows)


def systems_json(inv: Inventory, current: str | None) -> dict:
    return {"inventory": inv.path, "current": current, "systems": [
        {"name": s.name, "connect": s.connect, "endpoint": s.endpoint, "key": s.key, "tags": list(s.tags)}
        for s in inv.systems]}


def answer_json(a: Answer) -> dict:
    snap = a.snapshot or {}
    error = None if a.error is None else {"code": a.error.code, "message": a.error.message, "hint": a.error.console_hint()}
    return {
        "name": a.system.name, "tags": list(a.system.tags), "reachable": a.reachable,
        "rttMs": None if a.rtt_ms is None else round(a.rtt_ms, 2),
        **{k: snap.get(k) for k in ("serial", "state", "systemHealth", "activeExecmode", "configuredExecmode",
                                    "runHolder", "slurmJob", "activeFaults")},
        "error": error,
    }


def fleet_show(answers: list[Answer]) -> str:
    rows = []
    for a in answers:
        s = a.snapshot
        if s is None:
            rows.append((a.system.name, "-", "-", "-", "-", "-", "-", "no", "-"))
            continue
        mode = s["activeExecmode"] + ("" if s["configuredExecmode"] == s["activeExecmode"]
                                      else f" → {s['configuredExecmode']}")
        holder, job = s.get("runHolder"), s.get("slurmJob")
        rows.append((a.system.name, s["serial"], s["state"], s["systemHealth"], mode,
                     f"{holder['runId']} ({holder['owner']})" if holder else "-",
                     job["jobId"] if job else "-", "yes", f"{a.rtt_ms:.1f} ms"))
    table = _table(("SYSTEM", "SERIAL", "STATE", "HEALTH", "MODE", "RUN HOLDER", "SLURM JOB", "REACHABLE", "RTT"), rows)
    failed = [f"{a.system.name}: {a.error.message}" for a in answers if a.error is not None]
    answered = sum(1 for a in answers if a.reachable)
    tail = f"\n{answered} of {len(answers)} systems answered."
    return table + ("\n\n" + "\n".join(failed) if failed else "") + tail


def tagged(system: str, width: int, text: str) -> str:
    return f"{system.ljust(width)} │ {text}"


def fleet_event(system: str, width: int, event: dict) -> str:
    return tagged(system, width, event_line(event))


def outcome_json(o: Outcome) -> dict:
    return {"system": o.system, "outcome": o.outcome, "reason": o.reason, "code": o.code,
            "seconds": round(o.seconds, 3)}


def rolling_summary(outcomes: list[Outcome], mode: str) -> str:
    rows = [(o.system, o.outcome, f"{o.seconds:.1f} s" if o.seconds else "-", o.reason) for o in outcomes]
    counts = {k: sum(1 for o in outcomes if o.outcome == k) for k in ("done", "skipped", "failed")}
    return (f"Execution mode {mode}:\n" + _table(("SYSTEM", "OUTCOME", "TOOK", "REASON"), rows)
            + f"\n{counts['done']} done, {counts['skipped']} skipped, {counts['failed']} failed.")
