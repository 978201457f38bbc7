"""`csrun_wse [--total-nodes N] [--tasks-per-node T] [--cpus-per-task C] [--single-task-nodes S]
[--cyclic] python-ws|python-pt SCRIPT [ARGS…] --cs_ip SYSTEM`: run a cstorch script on the
system through the cluster's Slurm.

The layout is checked first (placement.py: weight streaming needs two single-task nodes), before
anything is allocated. Then `srun` allocates the training process's node — the node SYSTEM is
attached to (nodes.py), its wafer (`--gres=cs:1`) and, for python-ws, the execution mode's
feature (`--constraint=cs2_weight_streaming`; python-pt: `cs2_pipelined`) — and runs the script
there (`python -m csadmin.cstorch`). Slurm's own lines ("queued and waiting for resources", "has
been allocated resources") and the script's output pass straight through; the exit status is the
script's (srun's). Compiled artifacts in the script's compile_dir for the same system are reused
(the compile is reported cached); artifacts compiled for another system are refused.
"""

from __future__ import annotations

import argparse
import os
import sys

from csadmin import errors

from . import cluster, placement
from .args import help_asked, mode_of, split_script, take_option
from .cpu import script_command
from .nodes import node_of
from .system import system_env

USAGE = ("usage: csrun_wse [--total-nodes N] [--tasks-per-node T] [--cpus-per-task C] [--single-task-nodes S] "
         "[--cyclic] python-ws|python-pt SCRIPT [ARGS...] --cs_ip SYSTEM")


def _options(own: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="csrun_wse", add_help=False)
    for name in ("--total-nodes", "--tasks-per-node", "--cpus-per-task", "--single-task-nodes"):
        parser.add_argument(name, type=int)
    parser.add_argument("--cyclic", action="store_true")
    parser.add_argument("--cs_ip")
    parser.add_argument("--job-name", default="csrun_wse")
    known, unknown = parser.parse_known_args(own)
    if unknown:
        raise errors.UsageError(f"unknown option(s) {' '.join(unknown)}.", USAGE)
    return known


def srun_command(plan: placement.Plan, node: str | None, job_name: str, script: list[str]) -> list[str]:
    """The srun that allocates the training process's node and runs the script there."""
    cmd = ["srun", f"--job-name={job_name}", "--nodes=1", "--ntasks=1", f"--cpus-per-task={plan.cpus_per_task}",
           "--gres=cs:1", f"--constraint={plan.feature}"]
    if node is not None:
        cmd.append(f"--nodelist={node}")
    return cmd + script_command(script)


def prepare(argv: list[str], env: dict) -> tuple[placement.Plan, list[str], dict]:
    """(the layout, the srun command, its environment), or a CsError saying what is wrong."""
    own, interpreter, script = split_script(argv, tuple(placement.INTERPRETERS), USAGE)
    opts = _options(own)
    system, script = take_option(script, "--cs_ip")
    system = system or opts.cs_ip
    plan = placement.plan(interpreter, opts.total_nodes, opts.single_task_nodes, opts.tasks_per_node,
                          opts.cpus_per_task, opts.cyclic)
    if plan.workers:
        raise errors.UsageError(
            f"{plan.worker_nodes} input worker node(s) ({plan.workers} workers): this cstorch cannot feed a run "
            f"from worker processes on other nodes.",
            "Use --total-nodes equal to --single-task-nodes (the training process reads its own input).")
    mode, script = mode_of(script)
    if mode in ("validate_only", "compile_only"):
        raise errors.UsageError(f"--mode {mode} does not use the system.", "Run it on a CPU node: csrun_cpu.")
    if system is None:
        raise errors.UsageError("csrun_wse needs the system: --cs_ip SYSTEM.", USAGE)
    if not os.path.isfile(script[0]):
        raise errors.UsageError(f"no such script: {script[0]}.", USAGE)
    run_env = dict(env, **system_env(system))
    if mode is not None:
        run_env["CSTORCH_MODE"] = mode
    if not cluster.slurm_configured(run_env):
        raise errors.Unreachable("No Slurm cluster answers here (`sinfo` failed): csrun_wse runs through Slurm.",
                                 "Set SLURM_CONF to the cluster's slurm.conf, or run locally with csrun_cpu.")
    node = node_of(run_env["CS_CONNECT"], run_env)
    return plan, srun_command(plan, node, opts.job_name, script), run_env


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if (status := help_asked(argv, USAGE, __doc__)) is not None:
        return status
    try:
        _, cmd, env = prepare(argv, dict(os.environ))
    except errors.CsError as exc:
        print(f"csrun_wse: {exc}", file=sys.stderr)
        return exc.exit_code
    return cluster.run(cmd, env)
