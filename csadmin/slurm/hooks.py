"""The hooks Slurm's scripts run (`cs slurm …`, docs/slurm.md), each bounded in time and ending
with an exit code Slurm understands: 0 when it did its job, non-zero otherwise (for a prolog or
epilog that means "drain the node"; for the features helper "the mode was not switched").

    health-check   HealthCheckProgram: drain the node while the CS-2 cannot take jobs, resume it after
    features       node_features/helpers, no argument: print the active mode's feature
    set-feature    node_features/helpers, with a feature: STANDBY and the mode configured
    reboot         RebootProgram: activate, then have slurmd report the reboot
    prolog         wait (bounded) for ACTIVE in the job's mode; give the wafer to the job
    epilog         abort the run the job left holding the fabric

They talk to csd through the console's client (CS_CONNECT / CS_KEY, or csd's runtime dir and
root's key), so every change they make is audited under their key like an admin's. What Slurm
tells them about the job and the node is read through environment.py, which refuses a value
that is not sane UTF-8 text (exit 2: the prolog's job does not run; the node is drained).
"""

from __future__ import annotations

import socket
import time
from typing import Callable

from .. import errors
from ..shared.states import settles_to
from . import environment, features, health, scontrol, slurmd
from .report import Reporter


def _node_name(options: dict) -> str:
    return environment.value(options, "node") or socket.gethostname().split(".")[0]


def _from_env(options: dict, name: str, variable: str, what: str) -> str:
    value = environment.value(options, name)
    if not value:
        raise errors.UsageError(f"No {what}: Slurm sets {variable} for its scripts.",
                                f"Outside Slurm, pass --{name.replace('_', '-')}.")
    return value


def _deadline(options: dict, default: float) -> float:
    return time.monotonic() + (options.get("wait") or default)


def _left(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _settle(client, deadline: float) -> dict:
    """Wait for a pending transition to finish; return the system then."""
    snap = client.system_show()
    while settles_to(snap["state"]):
        snap = client.wait_for(state=settles_to(snap["state"]), timeout=_left(deadline))
    return snap


# -- HealthCheckProgram ----------------------------------------------------------------------------


def health_check(client, options: dict, say: Reporter) -> int:
    name = _node_name(options)
    node = scontrol.node(name)
    if node.rebooting:
        say(f"node {name} is being rebooted by Slurm to switch the execution mode; not judging the CS-2 meanwhile")
        return errors.EXIT_OK
    try:
        verdict = health.judge(client.system_show(), node)
    except errors.Unreachable:
        verdict = health.judge(None, node)
    except errors.CsError as exc:
        verdict = health.judge(None, node, unreachable=f"cannot ask csd ({exc.code})")
    action = health.decide(node, verdict)
    if action.kind == "drain":
        scontrol.drain(name, action.reason)
    elif action.kind == "resume":
        scontrol.resume(name)
    say(f"node {name}: {action.why}", error=action.kind == "drain")
    return errors.EXIT_OK


# -- node_features/helpers -------------------------------------------------------------------------


def features_show(client, options: dict, say: Reporter) -> int:
    """Print the active mode's feature on stdout, the only thing the plugin reads. While the
    system is not ACTIVE, the mode it will boot into (configured) is the one that counts."""
    snap = client.system_show()
    mode = snap["activeExecmode"] if snap["state"] == "ACTIVE" else snap["configuredExecmode"]
    print(features.feature_of(mode), flush=True)
    return errors.EXIT_OK


def features_set(client, options: dict, say: Reporter, feature: str) -> int:
    """Put the system in STANDBY configured for the feature's mode; the reboot program activates
    it. Refused while a run holds the fabric: Slurm must not take the wafer from a runtime."""
    mode = features.mode_of(feature)
    deadline = _deadline(options, 40.0)
    snap = client.system_show()
    if snap["state"] == "ACTIVE" and snap["activeExecmode"] == mode:
        say(f"{snap['serial']} is already ACTIVE in {mode}; nothing to switch")
        return errors.EXIT_OK
    holder = snap["runHolder"]
    if holder is not None:
        job = f", slurm job {holder['slurmJob']}" if holder.get("slurmJob") else ""
        say(f"refusing to switch {snap['serial']} to {mode}: run {holder['runId']} (owner {holder['owner']}{job}) "
            f"holds the fabric; jobs asking for {feature} wait until it ends or an admin aborts it", error=True)
        return errors.EXIT_BUSY
    snap = _settle(client, deadline)
    if snap["state"] == "ACTIVE" and snap["activeExecmode"] != mode:
        client.system_standby()  # csd refuses (BUSY) if a run got the fabric meanwhile
        snap = client.wait_for(state="STANDBY", timeout=_left(deadline))
    if snap["state"] == "STANDBY":
        client.execmode_setup(mode)
        say(f"{snap['serial']} is in STANDBY, configured for {mode}; Slurm's reboot (cs slurm reboot) activates it")
    else:
        say(f"{snap['serial']} is already ACTIVE in {mode}; nothing to switch")
    return errors.EXIT_OK


# -- RebootProgram --------------------------------------------------------------------------------


def reboot(client, options: dict, say: Reporter) -> int:
    """Slurm reboots the node to change its features: on this node that is the CS-2's activation
    (the host keeps running). Activate into the configured mode, wait for ACTIVE, then have
    slurmd re-register as rebooted so Slurm reads the new active feature and starts the job."""
    deadline = _deadline(options, 300.0)
    slurmd_found = slurmd.find_slurmd()
    if slurmd_found and slurmd.under_systemd(slurmd_found[0]):
        problem = slurmd.systemd_unit_ready()
        if problem:
            say(problem, error=True)
            return errors.EXIT_USAGE
    snap = _settle(client, deadline)
    if snap["state"] == "STANDBY":
        client.system_activate()
        snap = client.wait_for(state="ACTIVE", timeout=_left(deadline))
    say(f"{snap['serial']} is ACTIVE in {snap['activeExecmode']}")
    if slurmd_found is None:
        say("not run by slurmd, so no slurmd to restart: activation only")
        return errors.EXIT_OK
    slurmd.spawn_restarter(*slurmd_found)
    say(f"slurmd (pid {slurmd_found[0]}) restarts as rebooted once this program has exited")
    return errors.EXIT_OK


# -- Prolog and Epilog ----------------------------------------------------------------------------


def prolog(client, options: dict, say: Reporter) -> int:
    """Wait (bounded) until the system is ACTIVE in the mode the job's constraint names, then give
    the wafer to the job if it asked for it (`--gres=cs`), so its runs carry its id. On failure
    drain the node with the reason and exit non-zero: Slurm requeues the job, held."""
    try:
        job_id = _from_env(options, "job_id", "SLURM_JOB_ID", "job id")
        user = environment.value(options, "user") or "unknown"
        constraint = environment.value(options, "constraint") or ""
        _node_name(options)  # needed to drain the node if the job cannot run: checked before it starts
    except environment.HostileEnvironment as exc:
        _refuse_job(options, "prolog", exc, say)
        raise
    modes = features.modes_in_constraint(constraint)
    wafer = scontrol.job_wants_wafer(job_id)
    if not wafer and not modes:
        say(f"job {job_id} asks neither for the wafer (--gres=cs) nor for an execution mode; nothing to do")
        return errors.EXIT_OK
    wanted = " or ".join(sorted(modes)) if modes else "any mode"
    wait = options.get("wait") or 120.0
    deadline = _deadline(options, 120.0)
    while True:
        retry_in = 0.0  # seconds before asking again when waiting for an event cannot help
        try:
            snap = client.system_show()
            if snap["state"] == "ACTIVE" and (not modes or snap["activeExecmode"] in modes):
                if wafer:
                    result = client.slurm_job_begin(job_id, user)
                    say(result["message"])
                say(f"job {job_id} may run: {snap['serial']} is ACTIVE in {snap['activeExecmode']}")
                return errors.EXIT_OK
            code = errors.EXIT_STATE
            problem = f"{snap['serial']} is {snap['state']}, not ACTIVE in {wanted} after {wait:g} s"
            if snap["state"] == "ACTIVE":
                # Nothing will change the mode by itself: the switch Slurm asked for was refused or failed.
                problem = (f"{snap['serial']} is ACTIVE in {snap['activeExecmode']}, not {wanted} "
                           "(the mode switch was refused or failed: see `journalctl -t cs-slurm`)")
                break
        except (errors.Unreachable, errors.Busy) as exc:
            # csd away (restarting?), or a run outside Slurm holds the fabric: ask again shortly.
            what = "csd unreachable" if isinstance(exc, errors.Unreachable) else "busy"
            problem, code, retry_in = f"{what} for {wait:g} s: {exc.message}", exc.exit_code, 1.0
        except errors.CsError as exc:
            problem, code = f"{exc.message} {exc.console_hint()}".strip(), exc.exit_code
            break  # refused for a reason waiting will not fix (a key, an argument)
        if _left(deadline) <= 0:
            break
        if retry_in:
            time.sleep(min(retry_in, _left(deadline)))
            continue
        try:
            client.wait_for(state="ACTIVE", timeout=min(2.0, _left(deadline)))
        except errors.CsError:
            pass  # not yet: look again
    reason = f"cs prolog: job {job_id}: {problem}"
    say(f"job {job_id} may not run: {problem}; draining the node", error=True)
    try:
        scontrol.drain(_node_name(options), reason[:250])  # says why, where Slurm would say "Prolog error"
    except scontrol.SlurmError as exc:
        say(exc.message, error=True)
    return code


def epilog(client, options: dict, say: Reporter) -> int:
    """Abort the run the job left holding the fabric (reason "slurm job J ended") and forget the
    job, so the next job gets the wafer at once. When csd cannot be reached this is left undone
    and the epilog still succeeds: the health check drains the node for that, and csd aborts
    an open run when it restarts (or when its lease lapses)."""
    try:
        job_id = _from_env(options, "job_id", "SLURM_JOB_ID", "job id")
    except environment.HostileEnvironment as exc:
        _refuse_job(options, "epilog", exc, say)
        raise
    try:
        snap = client.system_show()
        holder = snap["runHolder"] or {}
        if (snap["slurmJob"] or {}).get("jobId") != job_id and holder.get("slurmJob") != job_id:
            say(f"job {job_id} held neither the wafer nor a run; nothing to do")
            return errors.EXIT_OK
        say(client.slurm_job_end(job_id)["message"])
    except errors.Unreachable as exc:
        say(f"job {job_id}: csd unreachable, its run (if any) was not aborted: {exc.message}", error=True)
    return errors.EXIT_OK


def _refuse_job(options: dict, hook: str, exc: environment.HostileEnvironment, say: Reporter) -> None:
    """Drain the node, saying why, for a job whose environment the hook refused (the hook then
    fails, exit 2: Slurm does not run the job, or drains the node after it). A node whose own
    name is what was refused cannot be named: Slurm drains it for the failed script."""
    try:
        scontrol.drain(_node_name(options), f"cs {hook}: {exc.message}"[:250])
    except environment.HostileEnvironment:
        pass
    except scontrol.SlurmError as failed:
        say(failed.message, error=True)


def run_hook(client, hook: Callable[..., int], name: str, options: dict, args: list[str]) -> int:
    """Run `hook` (one of the functions above) for `cs slurm NAME…`; report a failure to every
    place an admin looks, as its exit code."""
    say = Reporter(name)
    try:
        return hook(client, options, say, *args)
    except errors.CsError as exc:
        say(f"{exc.message} {exc.console_hint()}".strip(), error=True)
        return exc.exit_code
