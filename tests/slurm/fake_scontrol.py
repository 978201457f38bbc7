"""A stand-in for scontrol (a script that answers from files and records what it was asked), for
the hook tests that do not run a Slurm cluster: tests/slurm/test_hooks.py and the hostile
environments of tests/fuzz/test_fuzz_slurm_env.py."""

from __future__ import annotations

import os

FAKE_SCONTROL = """#!/bin/sh
# scontrol for the hook tests: answers `show job|node` from files, records every call.
echo "$*" >> "$FAKE_SLURM/calls"
case "$1 $2" in
  "show job") cat "$FAKE_SLURM/job" ;;
  "show node") cat "$FAKE_SLURM/node" ;;
esac
"""
WAFER_JOB = "JobId=7 JobName=train UserId=alice(1000) TresPerNode=gres:cs:1\n"
PLAIN_JOB = "JobId=7 JobName=post UserId=alice(1000) NumCPUs=1\n"
NODE = "NodeName=n1 State={state} ActiveFeatures=cs2_pipelined Reason={reason}\n"


class FakeSlurm:
    def __init__(self, path):
        self.dir = str(path)
        bindir = os.path.join(self.dir, "bin")
        os.mkdir(bindir)
        with open(os.path.join(bindir, "scontrol"), "w") as f:
            f.write(FAKE_SCONTROL)
        os.chmod(os.path.join(bindir, "scontrol"), 0o755)
        self.path = f"{bindir}:{os.environ['PATH']}"
        self.job(WAFER_JOB)
        self.node("IDLE")

    def job(self, line: str) -> None:
        with open(os.path.join(self.dir, "job"), "w") as f:
            f.write(line)

    def node(self, state: str, reason: str = "(null)") -> None:
        with open(os.path.join(self.dir, "node"), "w") as f:
            f.write(NODE.format(state=state, reason=reason))

    def calls(self) -> list[str]:
        try:
            with open(os.path.join(self.dir, "calls")) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    def updates(self) -> list[str]:
        return [c for c in self.calls() if c.startswith("update")]
