"""One system through the admin's procedure for a new execution mode: `system standby`,
`config execmode setup`, `system activate` (the seed's "Changing execution mode"), each step
through csd's ordinary operations, so its rules, events and audit trail are those of an admin
doing it by hand.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from .. import errors
from ..client import Client

DONE, SKIPPED, FAILED = "done", "skipped", "failed"


class Outcome(NamedTuple):
    """How one system ended: `outcome` (done / skipped / failed), why, the error's code (for a
    skip or failure) and how long it took."""

    system: str
    outcome: str
    reason: str
    code: str | None = None
    exit_code: int = errors.EXIT_OK
    seconds: float = 0.0


class Skip(Exception):
    """This system is left alone (its fabric is held), with the reason."""


def held(snap: dict) -> str | None:
    """Why the wafer is not free (a run holds the fabric, a Slurm job holds the wafer), or None."""
    holder, job = snap.get("runHolder"), snap.get("slurmJob")
    if holder:
        return f"run {holder['runId']} (owner {holder['owner']}) holds the fabric"
    if job:
        return f"Slurm job {job['jobId']} ({job['user']}) holds the wafer"
    return None


def _settle_seconds(snap: dict, margin: float) -> float:
    left = 0.0 if snap.get("pendingUntil") is None else max(0.0, (snap["pendingUntil"] - snap["time"]) / 1000)
    return left + margin


def switch(client: Client, mode: str, force: bool, margin: float, say: Callable[[str], None]) -> str:
    """Take the system to ACTIVE in `mode`; return what was done. Raises Skip if its fabric is
    held and not `force` (with `force`, standby aborts the run holding it), and the CsError of
    the step that failed otherwise. `margin`: seconds allowed past a transition's expected end."""
    snap = client.system_show()
    if (snap["state"], snap["activeExecmode"], snap["configuredExecmode"]) == ("ACTIVE", mode, mode):
        return f"already ACTIVE in {mode}; nothing to do"
    busy = held(snap)
    if busy and not force:
        raise Skip(f"{busy}; --force aborts it")
    if snap["state"] != "STANDBY":
        say(f"standby ({snap['state']}{', aborting: ' + busy if busy else ''})")
        client.system_standby(force=force)
        snap = client.wait_for(state="STANDBY", timeout=_settle_seconds(client.system_show(), margin))
    say(f"STANDBY; execmode setup {mode}")
    client.execmode_setup(mode)
    say("activate")
    client.system_activate()
    snap = client.wait_for(state="ACTIVE", execmode=mode, timeout=_settle_seconds(client.system_show(), margin))
    return f"ACTIVE in {snap['activeExecmode']}"
