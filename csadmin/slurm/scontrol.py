"""What the hooks ask of Slurm, through `scontrol`.

Slurm runs its scripts with next to no environment (HealthCheckProgram gets only
SLURMD_NODENAME), so every call gets a PATH with the usual system directories appended, and
`SLURM_CONF` is passed on when set (else scontrol uses its built-in /etc/slurm/slurm.conf).
Every call is bounded by a timeout, so a hung slurmctld cannot hang a hook.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import NamedTuple

from .. import errors

TIMEOUT_SECONDS = 20.0
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
GRES_NAME = "cs"  # gres.conf `Name=cs Count=1`: the wafer, one per node
# Node state flags while Slurm reboots the node to change its features (our features helper and
# reboot program are switching the execution mode then).
REBOOT_FLAGS = frozenset({"POWERING_UP", "REBOOT_ISSUED"})


class SlurmError(errors.CsError):
    """scontrol is missing, failed, or slurmctld did not answer in time (client-side)."""

    code, exit_code = "SLURM", errors.EXIT_UNREACHABLE


class Node(NamedTuple):
    """A node as `scontrol show node` reports it."""

    name: str
    state: str  # the base state: IDLE, MIXED, ALLOCATED, DOWN, …
    flags: frozenset  # DRAIN, POWERING_UP, NOT_RESPONDING, …
    reason: str | None  # without Slurm's " [user@time]" suffix
    active_features: frozenset

    @property
    def drained(self) -> bool:
        """Drained or draining: no new jobs start on it."""
        return "DRAIN" in self.flags

    @property
    def down(self) -> bool:
        return self.state == "DOWN"

    @property
    def rebooting(self) -> bool:
        return bool(self.flags & REBOOT_FLAGS)


def environment() -> dict:
    env = dict(os.environ)
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p]
    env["PATH"] = os.pathsep.join(path + [p for p in SYSTEM_PATH if p not in path])
    return env


def scontrol(*args: str) -> str:
    """Run scontrol; return its stdout, or raise SlurmError saying what went wrong."""
    command = ["scontrol", *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_SECONDS, env=environment(),
                              stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError("scontrol is not installed (or not on PATH).", "Install slurm-client on this node.") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{' '.join(command)}` did not finish within {TIMEOUT_SECONDS:g} s.",
                         "Is slurmctld up? `scontrol ping` says.") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip() or f"exit status {done.returncode}"
        raise SlurmError(f"`{' '.join(command)}` failed: {said}.",
                         "Check that slurmctld is up and SLURM_CONF names this cluster's slurm.conf.")
    return done.stdout


def parse_node(line: str) -> Node:
    """Parse one line of `scontrol show node -o NAME`."""
    reason = None
    head, sep, tail = line.rstrip("\n").partition(" Reason=")  # Reason is the last field, spaces and all
    if sep:
        reason = re.sub(r"\s*\[[^\]]*@[^\]]*\]\s*$", "", tail).strip() or None
    fields = dict(re.findall(r"(?:^|\s)(NodeName|State|ActiveFeatures)=(\S*)", head))
    if "NodeName" not in fields or "State" not in fields:
        raise SlurmError(f"Cannot read scontrol's node record: {line.strip()[:200]!r}.")
    state, *flags = fields["State"].split("+")
    features = fields.get("ActiveFeatures", "")
    active = frozenset(f for f in features.split(",") if f and f != "(null)")
    return Node(fields["NodeName"], state, frozenset(flags), reason, active)


def node(name: str) -> Node:
    return parse_node(scontrol("show", "node", "-o", name).strip().splitlines()[0])


def drain(name: str, reason: str) -> None:
    scontrol("update", f"NodeName={name}", "State=DRAIN", f"Reason={reason}")


def resume(name: str) -> None:
    scontrol("update", f"NodeName={name}", "State=RESUME")


def gres_names(job_line: str) -> set[str]:
    """The GRES a job asks for, from its `scontrol show job -o` line (TresPerNode=gres:cs:1, …)."""
    names = set()
    for value in re.findall(r"(?:^|\s)TresPer\w+=(\S+)", job_line):
        for item in value.split(","):
            parts = re.split(r"[:/]", item)
            if len(parts) >= 2 and parts[0] == "gres":
                names.add(parts[1])
    return names


def job_wants_wafer(job_id: str) -> bool:
    """Whether the job asked for the wafer (`--gres=cs:1`)."""
    return GRES_NAME in gres_names(scontrol("show", "job", "-o", job_id))
