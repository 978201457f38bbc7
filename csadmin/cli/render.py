"""Text rendering of results for people; JSON output bypasses this (stable keys, docs/cli.md)."""

from __future__ import annotations

import json
import time

from ..shared.states import settles_to
from .colour import PLAIN, Paint


ECHO_CHARS = 40  # how much of what was typed an error repeats


def shown(text: str, limit: int = ECHO_CHARS) -> str:
    """What was typed, cut short for an error message (a 5,000-character line is not echoed)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown_path(path: str, limit: int = ECHO_CHARS) -> str:
    """A file's path for an error message, cut short at its start so that its name stays."""
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def as_json(obj) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False)


def compact_json(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def local_zone() -> str:
    return time.strftime("%Z")


def fmt_ms(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ms / 1000)) + f".{ms % 1000:03d}"


def seconds_left(snap: dict) -> float | None:
    if snap.get("pendingUntil") is None:
        return None
    return max(0.0, (snap["pendingUntil"] - snap["time"]) / 1000)


def _rows(rows: list[tuple[str, str]]) -> str:
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)} : {v}" for k, v in rows)


def reply(result: dict) -> str:
    """Any op's reply for people: its message, else its keys one a line."""
    if "message" in result:
        return str(result["message"])
    return _rows([(key, _value(value)) for key, value in result.items()]) if result else ""


def _value(value) -> str:
    return "-" if value is None else value if isinstance(value, str) else compact_json(value)


def system_show(snap: dict, paint: Paint = PLAIN) -> str:
    rows = [
        ("System", f"{snap['serial']} ({snap['systemType']})"),
        ("State", snap["state"]),
        ("systemHealth", paint.health(snap["systemHealth"])),
        *(("Fault", fault_line(f)) for f in snap.get("activeFaults") or ()),
        ("Execution Mode", snap["activeExecmode"]),
    ]
    if snap["configuredExecmode"] != snap["activeExecmode"]:
        rows.append(("Configured Execution Mode", f"{snap['configuredExecmode']} (takes effect on `system activate`)"))
    if "runHolder" in snap:
        holder = snap["runHolder"]
        rows.append(("Fabric", run_holder(holder) if holder else "free (no run holds it)"))
    job = snap.get("slurmJob")
    if job:
        rows.append(("Slurm job", f"{job['jobId']} ({job['user']}), holds the wafer since {fmt_ms(job['since'])}"))
    left = seconds_left(snap)
    if left is not None:
        rows.append(("Pending", f"{settles_to(snap['state'])} in about {left:.1f} s"))
    daemon = snap.get("daemon")
    if daemon:
        rows += [
            ("csd version", daemon["version"]),
            ("csd started", fmt_ms(daemon["startedAt"])),
            ("Activation takes", f"{daemon['activateMs'] / 1000:g} s"),
            ("Standby takes", f"{daemon['standbyMs'] / 1000:g} s"),
            ("Events endpoint", daemon["eventsEndpoint"]),
            ("Last event seq", str(snap["seq"])),
        ]
    return _rows(rows)


def fault_line(fault: dict) -> str:
    """One fault present, for people: `psu-hardware-error (active, HARDWARE_ERROR, injected) a
    power supply unit reports a hardware error; until 12:00:05`."""
    status = fault["status"]
    if status == "scheduled":
        when = f"; due {fmt_ms(fault['due'])}"
    elif fault.get("until") is not None:
        when = f"; {'lapses' if status == 'armed' else 'clears'} {fmt_ms(fault['until'])}"
    else:
        when = "; until cleared" if status != "firing" else "; its transition is under way"
    source = f", scenario {fault['scenario']} line {fault['line']}" if fault.get("scenario") else ""
    return f"{fault['name']} ({status}, {fault['health']}, injected{source}) {fault['summary']}{when}"


def fault_changed(result: dict, paint: Paint = PLAIN) -> str:
    """What an inject or clear did, and the health it left."""
    lines = [result["message"], f"systemHealth {paint.health(result['systemHealth'])}"]
    lines += [f"  {fault_line(f)}" for f in result["activeFaults"]]
    return "\n".join(lines)


def fault_list(result: dict, paint: Paint = PLAIN) -> str:
    """`system fault list`: the faults present, the loaded scenario, and the catalogue."""
    lines = [f"systemHealth {paint.health(result['systemHealth'])}"]
    present = result["faults"]
    lines += [f"  {fault_line(f)}" for f in present] if present else ["  No fault is present."]
    scenario = result.get("scenario")
    if scenario:
        lines.append(f"Scenario {scenario['source']}: {scenario['description'] or '(no description)'} "
                     f"(loaded {fmt_ms(scenario['loadedAt'])}, {scenario['runsOpened']} run(s) opened since)")
        lines += [f"  waiting: {step}" for step in scenario["waiting"]]
    width = max(len(f["name"]) for f in result["catalogue"])
    lines.append("Faults that can be injected:")
    lines += [f"  {f['name'].ljust(width)}  {f['effect']:<10} {f['health']:<28} {f['summary']}"
              for f in result["catalogue"]]
    return "\n".join(lines)


def execmode_show(result: dict) -> str:
    lines = [f"Configured Execution Mode : {result['execmode']}"]
    if result["takesEffectOnActivate"]:
        lines.append(f"Active Execution Mode     : {result['activeExecmode']}")
        lines.append(f"The system runs in {result['activeExecmode']} until `system activate` reboots it into "
                     f"{result['execmode']}.")
    return "\n".join(lines)


# Event details that are instants in ms since the epoch: shown as local time (JSON keeps the number).
EPOCH_MS_DETAILS = frozenset({"expectedCompletion"})


def _detail(key: str, value) -> str:
    if key == "by" and isinstance(value, dict):  # who asked: the key name, not a Python dict
        return f"by={value.get('name') or '-'}"
    if key in EPOCH_MS_DETAILS and isinstance(value, int) and not isinstance(value, bool):
        return f"{key}={fmt_ms(value)}"
    if isinstance(value, (dict, list)):
        return f"{key}={compact_json(value)}"
    return f"{key}={value}"


def event_line(event: dict, paint: Paint = PLAIN) -> str:
    shown_details = event.get("details", {})
    # An injected fault's events say so up front: no operator may take them for real ones.
    injected = " (injected)" if shown_details.get("injected") is True else ""
    details = " ".join(_detail(k, v) for k, v in shown_details.items() if v not in (None, False) and k != "injected")
    severity = paint.severity(event["severity"], f"{event['severity']:<8}")
    return (f"{fmt_ms(event['triggerTime'])}  {severity} {event['type']}{injected}"
            + (f"  {details}" if details else ""))


def events(events: list[dict], paint: Paint = PLAIN) -> str:
    if not events:
        return "No events match."
    return "\n".join(event_line(e, paint) for e in events)


def run_holder(holder: dict) -> str:
    job = f"slurm job {holder['slurmJob']}, " if holder.get("slurmJob") else ""
    return (f"held by {holder['runId']} (owner {holder['owner']}, {job}{holder['mode']}, {holder['fabric']}, "
            f"since {fmt_ms(holder['since'])})")


def _run_state(run: dict) -> str:
    return run["status"] if run["status"] != "OPEN" else f"OPEN/{run['fabric']}"


def runs_list(result: dict) -> str:
    runs = result["runs"]
    if not runs:
        return "No runs."
    header = ("RUN", "OWNER", "SLURM JOB", "MODE", "STATE", "OPENED", "SAMPLES")
    return "\n".join(_table(header, [
        (r["runId"], r["owner"], r.get("slurmJob") or "-", r["mode"], _run_state(r), fmt_ms(r["openedAt"]),
         str(r["totalSamples"]))
        for r in runs
    ]))


def _table(header: tuple, rows: list[tuple]) -> list[str]:
    """Lines of left-aligned columns, as wide as their widest cell."""
    table = [header, *rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]


def run_show(run: dict) -> str:
    rows = [
        ("Run", run["runId"]),
        ("Owner", f"{run['owner']} (client {run['client']})"),
        ("Slurm job", run.get("slurmJob") or "-"),
        ("Mode", run["mode"]),
        ("State", _run_state(run)),
        ("Opened", fmt_ms(run["openedAt"])),
    ]
    if run["status"] == "OPEN":
        rows.append(("Lease", f"{run['leaseSeconds']:g} s, until {fmt_ms(run['leaseUntil'])}"))
    else:
        rows.append(("Ended", fmt_ms(run["endedAt"])))
    if run["abortReason"]:
        rows.append(("Abort reason", run["abortReason"]))
    if run.get("modelDir"):
        rows.append(("Model dir", run["modelDir"]))
    program = run.get("program")
    if program:
        rows.append(("Program", f"{program['fingerprint']} for {program['target_system']}, {program['execmode']}, "
                                f"{program['size_bytes']} bytes"))
        rows.append(("Compile checksum", compile_checksum(program["fingerprint"])))
    for key, value in (run.get("performance") or {}).items():
        rows.append((key, str(value).lower() if isinstance(value, bool) else f"{value:g}"))
    return _rows(rows) + _input_workers(run)


def compile_checksum(fingerprint: str) -> str:
    """The program's checksum as a cstorch compile directory is named (cs_<first 16 hex digits>)."""
    digest = fingerprint.partition(":")[2] or fingerprint
    return f"{digest[:16]} (compile directory cs_{digest[:16]})"


def _input_workers(run: dict) -> str:
    """The run's feeders (its opener and input workers) with their rates, and the report naming
    the ones below their fair share; nothing for a run fed by its opener alone."""
    report = run.get("inputReport")
    if not report or not report["slots"]:
        return ""
    header = ("FEEDER", "ROLE", "STATUS", "SAMPLES", "SAMPLES/S", "SHARE")
    rows = [
        (w["name"], w["role"], w["status"], str(w["samples"]), f"{w['samplesPerSec']:,.1f}", f"{w['share'] * 100:.1f}%")
        for w in run["workers"]
    ]
    lines = ["", f"Input workers: {report['joined']} of {report['slots']} joined"]
    lines += ["  " + line for line in _table(header, rows)]
    lines.append(f"Input report: {report['message']}")
    return "\n".join(lines)


def audit(entries: list[dict]) -> str:
    """One line per audit record: when, who (key and role), what, and how it ended."""
    if not entries:
        return "The audit log is empty."
    lines = []
    for e in entries:
        who = f"{e['name'] or '-'} ({e['role'] or 'no role'})"
        args = "" if e["args"] in ("{}", None) else f" {e['args']}"
        outcome = e["outcome"] if e["outcome"] == "ok" else f"{e['outcome']}: {e['message']}"
        lines.append(f"{fmt_ms(e['time'])}  {who:<22} {e['op'] or '-'}{args}  → {outcome}")
    return "\n".join(lines)
