"""`csrun_wse [--total-nodes N] [--tasks-per-node T] [--cpus-per-task C] [--single-task-nodes S]
[--cyclic] python-ws|python-pt SCRIPT [ARGS…] --cs_ip SYSTEM`: run a cstorch script on the
system through the cluster's Slurm.

The layout is checked first (placement.py: weight streaming needs two single-task nodes), before
anything is allocated. Then `srun` allocates the training process's node — the node SYSTEM is
attached to (nodes.py), its wafer (`--gres=cs:1`) and, for python-ws, the execution mode's
feature (`--constraint=cs2_weight_streaming`; python-pt: `cs2_pipelined`) — and runs the script
there (`python -m csadmin.cstorch`). Slurm's own lines ("queued and waiting for resources", "has
been allocated resources") and the script's output pass straight through; the exit status is the
script's. Compiled artifacts in the script's compile_dir for the same system are reused
(the compile is reported cached); artifacts compiled for another system are refused.

With worker nodes (N > S) the srun is one heterogeneous step of two components, allocated
together: the training process as above, and `--nodes=N-S --ntasks-per-node=T --cpus-per-task=C`
(`--distribution=cyclic` for --cyclic; never the trainer's node) running the same script as
input workers. Their count is the run's num_workers_per_csx; each learns its index from its Slurm
task id, finds the trainer through a rendezvous directory made here (csadmin/shared/rendezvous.py; every
task runs under csadmin/launch/task.py) and joins the run named by its Slurm task and node. The
exit status is then the training process's, read from its task's exit file (srun's otherwise).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile

from csadmin import errors
from csadmin.shared import rendezvous

from . import cluster, placement
from .args import launcher, mode_of, split_script, take_option
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


def srun_command(plan: placement.Plan, node: str | None, job_name: str, script: list[str],
                 meet: str | None = None) -> list[str]:
    """The srun that allocates the training process's node and runs the script there; with
    input workers (`meet`: the rendezvous directory) the workers' component too."""
    cmd = ["srun", f"--job-name={job_name}", "--nodes=1", "--ntasks=1", f"--cpus-per-task={plan.cpus_per_task}",
           "--gres=cs:1", f"--constraint={plan.feature}"]
    if node is not None:
        cmd.append(f"--nodelist={node}")
    if not plan.workers:
        return cmd + script_command(script)
    supervised = [sys.executable, "-m", "csadmin.launch.task"]
    workers = [":", f"--nodes={plan.worker_nodes}", f"--ntasks-per-node={plan.tasks_per_node}",
               f"--cpus-per-task={plan.cpus_per_task}"]
    if plan.cyclic:
        workers.append("--distribution=cyclic")
    if node is not None:
        workers.append(f"--exclude={node}")
    return (cmd + [*supervised, "trainer", meet, "--", *script_command(script)]
            + workers + [*supervised, "worker", meet, "--", *script_command(script)])


def prepare(argv: list[str], env: dict) -> tuple[placement.Plan, str | None, str, list[str], dict]:
    """(the layout, the training process's node, the job name, the script, its environment), or a
    CsError saying what is wrong. Nothing is allocated or written yet."""
    own, interpreter, script = split_script(argv, tuple(placement.INTERPRETERS), USAGE)
    opts = _options(own)
    system, script = take_option(script, "--cs_ip")
    system = system or opts.cs_ip
    plan = placement.plan(interpreter, opts.total_nodes, opts.single_task_nodes, opts.tasks_per_node,
                          opts.cpus_per_task, opts.cyclic)
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
    run_env.pop(rendezvous.DIR_ENV, None)
    run_env.pop(rendezvous.WORKER_ENV, None)
    return plan, node_of(run_env["CS_CONNECT"], run_env), opts.job_name, script, run_env


def run_with_workers(plan: placement.Plan, node: str | None, job_name: str, script: list[str], env: dict) -> int:
    """The heterogeneous step (see the module docstring); the training process's exit status."""
    meet = tempfile.mkdtemp(prefix=".csrun_wse-", dir=os.getcwd())  # 0700, on the file system the nodes share
    try:
        rendezvous.write_layout(meet, rendezvous.Layout(trainer_task=0, first_worker_task=1, workers=plan.workers))
        status = cluster.run(srun_command(plan, node, job_name, script, meet), env)
        trainer = rendezvous.read_exit(meet, 0)
        return int(trainer["status"]) if trainer and isinstance(trainer.get("status"), int) else status
    finally:
        shutil.rmtree(meet, ignore_errors=True)


@launcher(USAGE, __doc__)
def main(argv: list[str]) -> int:
    try:
        plan, node, job_name, script, env = prepare(argv, dict(os.environ))
    except errors.CsError as exc:
        print(f"csrun_wse: {exc}", file=sys.stderr)
        return exc.exit_code
    if plan.single_task_nodes > 1:  # said, not silently dropped
        print(f"csrun_wse: {plan.single_task_nodes} single-task nodes: the training process runs on one; this "
              f"runtime runs nothing on the other {plan.single_task_nodes - 1}, so they are not allocated.",
              file=sys.stderr)
    if plan.workers:
        return run_with_workers(plan, node, job_name, script, env)
    return cluster.run(srun_command(plan, node, job_name, script), env)
