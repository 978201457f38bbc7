"""Results: the JSON file of a run, its table, the plot, and bench/RESULTS.md's generated part.

RESULTS.md keeps its hand-written history; between the `bench:issue12` markers it holds tables
made from the runs recorded as its "before" and "after" columns (`run.py --record before|after`
names the run; the marker comments remember which files those are, so either column can be
re-recorded without touching the other).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
PLOT = os.path.join(HERE, "throughput.png")
BEGIN, END = "<!-- bench:issue12 begin", "<!-- bench:issue12 end -->"
COLUMNS = ("before", "after")
# Rows in the order of issue #12's table; rows a later suite adds go after them.
ORDER = ("show_16", "show_64", "show_64_vs_16", "show_1", "cpu_per_read", "rtt_p50", "rtt_p99",
         "change_seq", "change_16", "change_16_vs_seq", "hot_stream", "hot_heartbeat", "rss_reads", "rss_stream",
         "rss_idle", "fanout_p99", "fanout_p50", "change_kept", "restart_kept", "rss_kept", "events_show_kept",
         "oneshot", "shell_prompt", "stream_16_vs_1", "metrics_prom", "metrics_storm")


def save(results: dict, out_dir: str) -> str:
    os.makedirs(out_dir, exist_ok=True)
    git = results["meta"]["git"]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    suffix = "-quick" if results["meta"]["quick"] else ""
    path = os.path.join(out_dir, f"{stamp}-{git['commit'][:7] or 'nogit'}{suffix}.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path


# -- formatting ------------------------------------------------------------------------------------


def num(x, unit: str = "") -> str:
    if x is None:
        return "—"
    if unit in ("req/s", "/s") or abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}" if abs(x) >= 0.1 or x == 0 else f"{x:.3g}"


def value(s: dict | None, spread: bool = True) -> str:
    if not s or s.get("median") is None:
        return "—"
    unit = s.get("unit", "")
    text = num(s["median"], unit) + (f" {unit}" if unit else "")
    if spread and s["n"] > 1:
        text += f" ({num(s['min'], unit)}..{num(s['max'], unit)})"
    return text


def ratio(s: dict | None, spread: bool = True) -> str:
    if not s or s.get("median") is None:
        return "—"
    text = f"{s['median']:.2f}×"
    if spread and s["n"] > 1:
        text += f" ({s['min']:.2f}..{s['max']:.2f})"
    return text


def mark(r: dict) -> str:
    return {True: " ✔", False: " ✘", None: ""}[r.get("met")]


def others(r: dict) -> str:
    parts = []
    for name, o in r.get("others", {}).items():
        text = f"{name} {value(o['value'], spread=False)}"
        if o.get("csd_ratio") and o["csd_ratio"].get("median") is not None:
            text += f" (csd {ratio(o['csd_ratio'], spread=False)})"
        parts.append(text)
    return "; ".join(parts)


def load_text(r: dict) -> str:
    """Per repetition: the 1-minute load average / the CPUs other users kept busy meanwhile."""
    load, busy = r.get("load", []), r.get("busy", [])
    parts = [f"{x:.2f}" + (f" / {busy[i]:.2f}" if i < len(busy) else "") for i, x in enumerate(load)]
    return ", ".join(parts) or "—"


def one_line(r: dict) -> str:
    text = f"{r['label']}: csd {value(r['csd'])}"
    if r.get("ref"):
        text += f" vs {r['ref_name']} {value(r['ref'])}"
    if r.get("ratio"):
        text += f" → {ratio(r['ratio'])}"
    if r.get("target"):
        text += f" [target {r['target']['text']}{mark(r)}]"
    return text


def short_cell(r: dict | None) -> str:
    if r is None:
        return "—"
    text = value(r["csd"], spread=False)
    if r.get("ref"):
        text += f" vs {value(r['ref'], spread=False)}"
    if r.get("ratio"):
        text += f" → **{ratio(r['ratio'], spread=False)}**"
    return text + mark(r)


def _ordered(rows: list[dict]) -> list[dict]:
    rank = {rid: i for i, rid in enumerate(ORDER)}
    return sorted(rows, key=lambda r: rank.get(r["id"], len(ORDER)))


def table(results: dict) -> str:
    """The full table of one run: every row with its spread, references, ratio and load."""
    lines = ["| figure | csd | reference | ratio (target) | also measured | per rep: load avg / others' CPUs |",
             "|---|---|---|---|---|---|"]
    for r in _ordered(results["rows"]):
        ref = f"{r['ref_name']} {value(r['ref'])}" if r.get("ref") else "—"
        goal = ratio(r["ratio"]) if r.get("ratio") else ""
        if r.get("target"):
            goal += (" (target {}{})" if goal else "target {}{}").format(r["target"]["text"], mark(r))
        label = r["label"] + (f" — {r['note']}" if r.get("note") else "")
        lines.append(f"| {label} | {value(r['csd'])} | {ref} | {goal or '—'} | {others(r) or '—'} | {load_text(r)} |")
    return "\n".join(lines)


def describe(results: dict, path: str) -> str:
    m = results["meta"]
    git = m["git"]
    cond = results.get("conditions", {})
    busy = [c["before"]["others_busy_cpus"] for c in cond.values() if "before" in c]
    waited = sum(c["before"]["waited_s"] for c in cond.values() if "before" in c)
    versions = ", ".join(f"{k.split(':')[1]} {v}" for k, v in m.get("versions", {}).items()
                         if k in ("csd:csadmin", "csd:pyzmq", "csd:libzmq", "circus:circus", "supervisor:supervisor"))
    during = max((x for r in results["rows"] for x in r.get("busy", [])), default=None)
    text = (f"Run `{os.path.relpath(path, os.path.dirname(HERE))}`: commit `{git['describe']}`"
            f"{' (with uncommitted changes)' if git['dirty'] else ''}, {m['started']} to {m['finished']}; "
            f"{m['machine']['cpus']} CPUs ({m['machine']['cpu_model']}), {m['settings']['pinning']}, "
            f"{m['settings']['reps']} repetitions of {m['settings']['duration']} s per point; {versions}. "
            f"Load average {', '.join(map(str, m['loadavg_start']))} at the start, "
            f"{', '.join(map(str, m['loadavg_end']))} at the end; before each figure other users kept "
            f"{min(busy, default=0)}..{max(busy, default=0)} CPUs busy")
    text += f" (the suite waited {waited:.0f} s in all for quieter moments)" if waited >= 5 else ""
    if during is not None:
        text += (f"; during the rounds kept, they took up to {during:.2f} CPUs (each row's last column: per "
                 "repetition, the load average / others' CPUs)")
    text += "."
    if m.get("failed"):
        text += f" Failed: {', '.join(m['failed'])}."
    return text


# -- RESULTS.md ------------------------------------------------------------------------------------


def _load(path: str | None) -> dict | None:
    if not path:
        return None
    full = os.path.join(HERE, path)
    if not os.path.exists(full):
        return None
    with open(full) as f:
        return json.load(f)


def generated_section(columns: dict[str, str | None]) -> str:
    runs = {c: _load(columns.get(c)) for c in COLUMNS}
    by_id = {c: {r["id"]: r for r in (runs[c] or {}).get("rows", [])} for c in COLUMNS}
    ids = [rid for rid in ORDER if any(rid in by_id[c] for c in COLUMNS)]
    ids += sorted({rid for c in COLUMNS for rid in by_id[c]} - set(ids))
    out = [f"{BEGIN} (made by `bench/run.py --record`; edit outside these markers) -->"]
    out += [f"<!-- {c}: {columns.get(c) or ''} -->" for c in COLUMNS]
    out += ["", "### Summary: csd vs its reference, and the target", "",
            "| figure | target | before | after |", "|---|---|---|---|"]
    for rid in ids:
        any_row = next(by_id[c][rid] for c in COLUMNS if rid in by_id[c])
        goal = any_row["target"]["text"] if any_row.get("target") else "—"
        ref = f" (vs {any_row['ref_name']})" if any_row.get("ref_name") else ""
        out.append(f"| {any_row['label']}{ref} | {goal} | {short_cell(by_id['before'].get(rid))} "
                   f"| {short_cell(by_id['after'].get(rid))} |")
    for c in COLUMNS:
        out += ["", f"### {c.capitalize()}: every figure", ""]
        if runs[c] is None:
            out.append(f"Not measured yet: `python bench/run.py --record {c}`.")
            continue
        out += [describe(runs[c], os.path.join(HERE, columns[c])), "", table(runs[c])]
    out += ["", END]
    return "\n".join(out)


def record(path: str, column: str) -> None:
    """Make `path` (a results file) the `column` of RESULTS.md's generated tables."""
    with open(RESULTS_MD) as f:
        text = f.read()
    columns = {c: None for c in COLUMNS}
    if BEGIN in text:
        for c in COLUMNS:
            m = re.search(rf"<!-- {c}: (\S*) -->", text)
            columns[c] = m.group(1) if m and m.group(1) else None
    columns[column] = os.path.relpath(path, HERE)
    section = generated_section(columns)
    if BEGIN in text:
        start = text.index(BEGIN)
        end = text.index(END) + len(END)
        text = text[:start] + section + text[end:]
    else:
        heading = "## Issue #12: the performance suite (`python bench/run.py`)"
        text = text.rstrip("\n") + f"\n\n{heading}\n\n{section}\n"
    with open(RESULTS_MD, "w") as f:
        f.write(text)


# -- the plot --------------------------------------------------------------------------------------


def plot(bench, path: str, png: str = PLOT) -> str | None:
    """Throughput vs clients (plot.py, in the plot venv) as `png`; csd's recorded "before" is
    drawn too, dashed, when this run is another one."""
    before = None
    if os.path.exists(RESULTS_MD):
        with open(RESULTS_MD) as f:
            m = re.search(r"<!-- before: (\S+) -->", f.read())
        if m and os.path.join(HERE, m.group(1)) != path:
            before = os.path.join(HERE, m.group(1))
    argv = [bench.python("plot"), os.path.join(HERE, "plot.py"), path, png] + ([before] if before else [])
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        bench.say(f"plot failed: {done.stderr.strip()[-500:]}")
        return None
    return png
