"""Medians with their spread, percentiles, and the rows every figure reports.

A figure's result is a list of rows: `row(id, label, csd=..., ref=..., ratio=..., target=...)`.
Values are `summary()` dicts (median, min, max over the repetitions) so the report can print
"median (min..max)" and the JSON keeps every repetition.
"""

from __future__ import annotations

import statistics


def summary(values, unit: str = "") -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {"median": None, "min": None, "max": None, "n": 0, "values": [], "unit": unit}
    return {
        "median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values),
        "values": [round(v, 6) for v in values], "unit": unit,
    }


def percentile(sorted_values: list, q: float):
    """The q-th percentile (0..100) of already sorted values (nearest rank)."""
    if not sorted_values:
        return None
    rank = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[rank]


def row(id: str, label: str, csd: dict, ref: dict | None = None, ref_name: str = "", ratio: dict | None = None,
        target: dict | None = None, others: dict | None = None, load: list | None = None, busy: list | None = None,
        note: str = "") -> dict:
    """One line of the results table.

    `csd` and `ref` are summaries; `ratio` a summary of per-repetition ratios (csd / ref, or
    whatever `target` compares); `target` is {"text": "≥ 0.5×", "op": ">=" or "<=", "value": x}
    and is judged on the median ratio (or on the csd value when there is no ratio);
    `others` more reference summaries by name (circus, supervisor, …); `load` the 1-minute
    load average seen at each repetition and `busy` the CPUs other users of the machine kept
    busy during it (suite.OthersMeter)."""
    met = None
    if target is not None:
        judged = (ratio or csd)["median"]
        if judged is not None:
            met = judged >= target["value"] if target["op"] == ">=" else judged <= target["value"]
    return {
        "id": id, "label": label, "csd": csd, "ref": ref, "ref_name": ref_name, "ratio": ratio,
        "target": target, "met": met, "others": others or {}, "load": load or [], "busy": busy or [], "note": note,
    }


def target(op: str, value: float, text: str) -> dict:
    return {"op": op, "value": value, "text": text}


def busiest(*per_rep: list) -> list:
    """Per repetition, the most CPU other users took during any of the given measurements."""
    return [max(values) for values in zip(*per_rep)]


def ratios(numerators, denominators) -> dict:
    """Per-repetition ratios (pairs measured in the same repetition), summarised."""
    return summary([a / b for a, b in zip(numerators, denominators) if a is not None and b])
