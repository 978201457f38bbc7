"""Shared pieces of the launcher tests: run a launcher as the user does (its console script
from the venv, in a directory of its own), and csd's view of what happened."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.harness import ROOT

BIN = os.path.dirname(sys.executable)
TRAIN = os.path.join(ROOT, "examples", "cstorch", "train.py")


def launcher(name: str, *args: str, env: dict, cwd: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.join(BIN, name), *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def user_env(daemon, **extra) -> dict:
    """The user's environment: a key for the system, but no system chosen (--cs_ip says which)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "CS_", "CSTORCH_"))}
    env.update(CS_KEY=daemon.admin_key, PYTHONPATH=ROOT, **extra)
    return env


def runs(daemon) -> list[dict]:
    with daemon.client() as c:
        return c.runs_list()["runs"]


def programming_events(daemon) -> int:
    shown = daemon.cs("events", "show", "--max-count", "500")
    assert shown.returncode == 0, shown.stderr
    return sum("ProgrammingStarted" in line for line in shown.stdout.splitlines())


def report(directory: str) -> dict:
    from csadmin.launch.report import read_report

    return read_report(os.path.join(directory, "compile_report.txt"))
