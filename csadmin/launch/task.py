"""`python -m csadmin.launch.task trainer|worker DIR -- CMD…`: one Slurm task of a csrun_wse job
with input workers on other nodes (csadmin/shared/rendezvous.py describes DIR).

It runs CMD (the cstorch script) as its child, with the environment of its role:

  trainer   $CSTORCH_WORKERS_RENDEZVOUS, and `$CS_INPUT_WORKER_BIND` = `tcp://ADDRESS:*`, ADDRESS
            being the address Slurm reaches this node at (`scontrol show node` NodeAddr,
            resolved to an IP: ZeroMQ binds interfaces, not names), unless the user set it;
  worker    the same directory, `$CSTORCH_INPUT_WORKER` = its index among the workers (its Slurm
            task id minus the first worker's: Slurm numbers the tasks of a heterogeneous step
            across its components), and `CSTORCH_MODE=validate_only` (its cstorch.compile checks
            the system and compiles nothing: the worker only runs the input function).

When the child ends — exit, exception, signal — it writes DIR/task-<SLURM_PROCID>.exit (status,
signal, node, pid): the trainer learns a worker is gone that way, the workers that their trainer
is, and csrun_wse returns the trainer's status. Its own exit status is the child's. Slurm delivers
Ctrl-C and scancel's signals to every process of the step (its process tracking), the child
included: this process ignores SIGINT and SIGTERM and waits for the child to end.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys

from csadmin.shared import rendezvous

ROLES = ("trainer", "worker")
USAGE = "usage: python -m csadmin.launch.task trainer|worker DIR -- CMD [ARGS...]"
_NODE_ADDR = re.compile(r"\bNodeAddr=(\S+)")


def node_address(node: str | None) -> str:
    """The IP other nodes reach `node` at: Slurm's NodeAddr for it, else this host's name's."""
    name = None
    if node:
        try:
            done = subprocess.run(["scontrol", "show", "node", "-o", node], capture_output=True, text=True,
                                  timeout=30, stdin=subprocess.DEVNULL)
            found = _NODE_ADDR.search(done.stdout) if done.returncode == 0 else None
            name = found.group(1) if found else None
        except (OSError, subprocess.TimeoutExpired):
            pass
    try:
        return socket.gethostbyname(name or socket.gethostname())
    except OSError:
        return "127.0.0.1"  # a host that cannot resolve its own name reaches nothing else either


def role_env(role: str, directory: str, env: dict) -> dict:
    """The child's environment (see the module docstring)."""
    layout = rendezvous.read_layout(directory)
    env = dict(env, **{rendezvous.DIR_ENV: directory})
    env.pop(rendezvous.WORKER_ENV, None)
    if role == "trainer":
        if not env.get(rendezvous.BIND_ENV):
            env[rendezvous.BIND_ENV] = f"tcp://{node_address(env.get('SLURMD_NODENAME'))}:*"
        return env
    index = int(env.get("SLURM_PROCID", "0")) - layout.first_worker_task
    if not 0 <= index < layout.workers:
        raise ValueError(f"Slurm task {env.get('SLURM_PROCID')} is not one of the {layout.workers} input workers")
    env.update({rendezvous.WORKER_ENV: str(index), "CSTORCH_MODE": "validate_only"})
    return env


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[0] not in ROLES or argv[2] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    role, directory, cmd = argv[0], os.path.abspath(argv[1]), argv[3:]
    try:
        env = role_env(role, directory, dict(os.environ))
    except ValueError as exc:
        print(f"csrun_wse task: {exc}", file=sys.stderr)
        return 2
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    proc = subprocess.Popen(cmd, env=env, preexec_fn=_default_signals)
    status = proc.wait()
    rendezvous.write_json(directory, rendezvous.exit_name(int(os.environ.get("SLURM_PROCID", "0"))), {
        "status": 128 - status if status < 0 else status,
        "signal": signal.Signals(-status).name if status < 0 else None,
        "node": os.environ.get("SLURMD_NODENAME") or socket.gethostname(), "pid": proc.pid})
    return 128 - status if status < 0 else status


def _default_signals() -> None:
    """In the child: Ctrl-C and SIGTERM do what they do to a script (SIG_IGN would be inherited)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
