"""`cs_input_analyzer [--cs_ip SYSTEM] [--total-nodes N] [--tasks-per-node T] [--cpus-per-task C]
[--seconds S] [--compile-report FILE] [--local] [python] SCRIPT [ARGS…]`: measure a cstorch
script's input function on the CPUs a job would get, and recommend the seeds' `nodes`,
`tasks_per_node` and `cpus_per_task` to feed the compiled program's est_samples_per_sec (002).

Under Slurm (csadmin/launch/cluster.py) `srun` allocates N nodes × T tasks of C CPUs, no wafer;
locally T processes run here (N must be 1). Each task runs the script up to its
`cstorch.utils.data.DataLoader(input_fn, …)` (cstorch.compile still checks the system: give
--cs_ip or $CS_CONNECT) and then only draws batches from input_fn for S seconds, as input worker
T of N×T (cstorch/utils/data/_utils/input_analysis.py). The target is est_samples_per_sec of
compile_report.txt in this directory (csrun_cpu … --mode compile_only writes it). The report —
per worker and per CPU, the recommendation (sizing.py), whether the current N×T workers would be
input-bound — is printed and written to input_analysis_report.txt here. Exit 0 when measured.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from csadmin import errors

from . import cluster, sizing
from .args import launcher, take_option
from .cpu import script_command
from .report import REPORT, read_report, write_text
from .system import system_env

USAGE = ("usage: cs_input_analyzer [--cs_ip SYSTEM] [--total-nodes N] [--tasks-per-node T] [--cpus-per-task C] "
         "[--seconds S] [--compile-report FILE] [--local] [python] SCRIPT [ARGS...]")
OUTPUT = "input_analysis_report.txt"


def _parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    i = next((k for k, a in enumerate(argv) if a == "python" or (not a.startswith("-") and a.endswith(".py"))), None)
    if i is None:
        raise errors.UsageError("no SCRIPT on the command line.", USAGE)
    own, script = argv[:i], argv[i + 1:] if argv[i] == "python" else argv[i:]
    if not script:
        raise errors.UsageError("python needs a script.", USAGE)
    parser = argparse.ArgumentParser(prog="cs_input_analyzer", add_help=False)
    for name in ("--total-nodes", "--tasks-per-node", "--cpus-per-task"):
        parser.add_argument(name, type=int, default=1)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--compile-report", default=REPORT)
    parser.add_argument("--cs_ip")
    parser.add_argument("--local", action="store_true")
    try:
        opts, unknown = parser.parse_known_args(own)
    except SystemExit:
        raise errors.UsageError("bad option value.", USAGE) from None
    if unknown:
        raise errors.UsageError(f"unknown option(s) {' '.join(unknown)}.", USAGE)
    for name in ("total_nodes", "tasks_per_node", "cpus_per_task", "seconds"):
        if getattr(opts, name) <= 0:
            raise errors.UsageError(f"--{name.replace('_', '-')} must be positive.", USAGE)
    if not os.path.isfile(script[0]):
        raise errors.UsageError(f"no such script: {script[0]}.", USAGE)
    return opts, script


def _measure_locally(opts, cmd: list[str], env: dict) -> int:
    if opts.total_nodes != 1:
        raise errors.UsageError(f"--total-nodes {opts.total_nodes} needs a Slurm cluster; here is one node.",
                                "Use --total-nodes 1 locally, or set SLURM_CONF to the cluster's slurm.conf.")
    count = opts.tasks_per_node
    procs = [subprocess.Popen(cmd, env=dict(env, CSTORCH_ANALYZE_TASK=str(t), CSTORCH_ANALYZE_TASKS=str(count),
                                            CSTORCH_ANALYZE_CPUS=str(opts.cpus_per_task)))
             for t in range(count)]
    statuses = [cluster.run_wait(p) for p in procs]
    return max(statuses)


def _node_cpus(env: dict, use_slurm: bool) -> int:
    if use_slurm:
        done = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True, env=env, timeout=10)
        counts = [int(x) for x in done.stdout.split() if x.strip().isdigit()]
        if counts:
            return min(counts)
    return os.cpu_count() or 1


def render(script: str, results: list[dict], s: sizing.Sizing, opts) -> str:
    nodes = sorted({r["node"] for r in results})
    each = ", ".join(f"{r['samples_per_sec']:g}" for r in sorted(results, key=lambda r: r["task"]))
    lines = [f"# cs_input_analyzer report: {script}, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
             f"measured_tasks: {len(results)} on {', '.join(nodes)}, {opts.cpus_per_task} cpu(s) each",
             f"samples_per_sec_per_worker: {s.per_worker:.3f} (median of the tasks: {each})",
             f"samples_per_sec_per_cpu: {s.per_cpu:.3f}",
             f"est_samples_per_sec: {s.target:g}",
             f"current_workers: {s.current_workers} (nodes {opts.total_nodes} x tasks_per_node {opts.tasks_per_node})",
             f"current_input_samples_per_sec: {s.current_rate:.3f}",
             f"input_bound: {'yes' if s.input_bound else 'no'}"
             + (" (below half the estimate: csd would report suspected_input_bottleneck)" if s.flagged else ""),
             f"workers_needed: {s.workers} (the estimate x {sizing.HEADROOM:g} / samples_per_sec_per_worker)",
             "# recommended settings (csrun_wse --total-nodes/--tasks-per-node/--cpus-per-task, for the input workers;",
             "# num_workers_per_csx = nodes x tasks_per_node):",
             f"nodes: {s.nodes}", f"tasks_per_node: {s.tasks_per_node}", f"cpus_per_task: {s.cpus_per_task}"]
    return "\n".join(lines) + "\n"


@launcher(USAGE, __doc__)
def main(argv: list[str]) -> int:
    try:
        opts, script = _parse(argv)
        target = float(read_report(opts.compile_report)["est_samples_per_sec"])
        in_script, script = take_option(script, "--cs_ip")
        _, script = take_option(script, "--mode")
        env = dict(os.environ, **system_env(opts.cs_ip or in_script), CSTORCH_MODE="validate_only",
                   CSTORCH_ANALYZE_SECONDS=str(opts.seconds))
    except errors.CsError as exc:
        print(f"cs_input_analyzer: {exc}", file=sys.stderr)
        return exc.exit_code
    out = tempfile.mkdtemp(prefix=".cs_input_analyzer-", dir=os.getcwd())  # shared with the nodes
    env["CSTORCH_ANALYZE_OUT"] = out
    cmd = script_command(script)
    try:
        use_slurm = not opts.local and cluster.slurm_configured(env)
        if use_slurm:
            status = cluster.run(["srun", "--job-name=cs_input_analyzer", f"--nodes={opts.total_nodes}",
                                  f"--ntasks-per-node={opts.tasks_per_node}", f"--cpus-per-task={opts.cpus_per_task}",
                                  *cmd], env)
        else:
            status = _measure_locally(opts, cmd, env)
        results = []
        for path in glob.glob(os.path.join(out, "task-*.json")):
            with open(path, encoding="utf-8") as f:
                results.append(json.load(f))
    except errors.CsError as exc:
        print(f"cs_input_analyzer: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        shutil.rmtree(out, ignore_errors=True)
    expected = opts.total_nodes * opts.tasks_per_node
    if status != 0 or len(results) != expected:
        print(f"cs_input_analyzer: {len(results)} of {expected} task(s) measured (exit status {status}): the script "
              "must reach cstorch.utils.data.DataLoader(input_fn, ...) and its input_fn must yield batches.",
              file=sys.stderr)
        return status or errors.EXIT_INTERNAL
    rates = [r["samples_per_sec"] for r in results]
    if max(rates) <= 0:
        print("cs_input_analyzer: the input function produced no samples.", file=sys.stderr)
        return errors.EXIT_STATE
    s = sizing.size(rates, opts.cpus_per_task, target, _node_cpus(env, use_slurm), expected)
    text = render(script[0], results, s, opts)
    write_text(os.path.join(os.getcwd(), OUTPUT), text)
    print(text, end="")
    return 0
