"""The plot: `system.show` (and each contender's read) throughput vs concurrent clients, median
with min..max bars, from a results file's `reads` figure; a second results file (the recorded
"before") adds csd's earlier curve, dashed.

Run by report.py with the plot venv's Python (matplotlib):
    python plot.py RESULTS.json OUT.png [BEFORE.json]
"""

from __future__ import annotations

import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"csd": ("C0", "o"), "echo+CURVE": ("C1", "s"), "echo": ("C2", "^"), "circus": ("C3", "D"),
         "supervisor": ("C4", "v")}


def curves(results: dict) -> dict[str, list[tuple[int, float, float, float]]]:
    """{contender: [(clients, median, min, max)]} from the reads figure's raw runs."""
    runs = results.get("raw", {}).get("reads", {}).get("runs", {})
    out: dict[str, list] = {}
    for key, reps in runs.items():
        name, _, clients = key.rpartition("@")
        rates = [r["rate"] for r in reps]
        if rates:
            out.setdefault(name, []).append((int(clients), statistics.median(rates), min(rates), max(rates)))
    return {name: sorted(points) for name, points in out.items()}


def draw(ax, points, label, color, marker, dashed=False) -> None:
    xs = [p[0] for p in points]
    med = [p[1] for p in points]
    err = [[p[1] - p[2] for p in points], [p[3] - p[1] for p in points]]
    ax.errorbar(xs, med, yerr=err, label=label, color=color, marker=marker, capsize=3,
                linestyle="--" if dashed else "-", alpha=0.6 if dashed else 1.0)


def main(path: str, out: str, before: str | None = None) -> None:
    with open(path) as f:
        results = json.load(f)
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, points in curves(results).items():
        color, marker = STYLE.get(name, ("C7", "x"))
        draw(ax, points, name, color, marker)
    if before:
        with open(before) as f:
            old = curves(json.load(f)).get("csd")
        if old:
            draw(ax, old, "csd (before)", STYLE["csd"][0], "o", dashed=True)
    meta = results["meta"]
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 16, 64], labels=["1", "16", "64"])
    ax.set_xlabel("concurrent clients (closed loop, one request outstanding each)")
    ax.set_ylabel("replies per second (median, min..max)")
    ax.set_title(f"Read throughput: csd system.show vs the ZeroMQ limit and other managers\n"
                 f"commit {meta['git']['commit'][:7]} · {meta['started'][:10]} · {meta['settings']['pinning']}",
                 fontsize=10)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
