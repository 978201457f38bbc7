"""The health check's judgement of the CS-2, and what it does to the node (pure: no I/O).

A node takes jobs only while its CS-2 is ACTIVE with `systemHealth` OK or DEGRADED, in the mode
Slurm believes is active. Otherwise the health check drains the node with a reason saying what
is wrong, ending in REASON_MARK; it resumes only a node whose reason ends so. A node drained or
downed for any other reason (an admin's maintenance, Slurm's "Prolog error", "Not responding")
is never touched: whoever drained it resumes it.
"""

from __future__ import annotations

from typing import NamedTuple

from ..shared.states import ACTIVATED_HEALTH
from .features import feature_of
from .scontrol import Node

REASON_MARK = " (cs health check)"


class Verdict(NamedTuple):
    ok: bool
    what: str  # what is wrong (the drain reason, before REASON_MARK), or what is right


class Action(NamedTuple):
    kind: str  # "drain", "resume", "keep" (ours, already right) or "leave" (not ours)
    reason: str | None  # the drain reason, for "drain"
    why: str  # for the log


def reason(what: str) -> str:
    return what + REASON_MARK


def is_ours(node_reason: str | None) -> bool:
    return bool(node_reason) and node_reason.endswith(REASON_MARK)


def judge(snap: dict | None, node: Node, unreachable: str = "csd unreachable") -> Verdict:
    """`snap` is csd's system.show (None when csd could not be asked: `unreachable` says why)."""
    if snap is None:
        return Verdict(False, unreachable)
    serial, state, health = snap["serial"], snap["state"], snap["systemHealth"]
    if state != "ACTIVE":
        return Verdict(False, f"{serial} {state}")
    if health not in ACTIVATED_HEALTH:
        return Verdict(False, f"systemHealth {health}")
    feature = feature_of(snap["activeExecmode"])
    if feature not in node.active_features:
        # An admin switched the mode by hand: Slurm would place jobs by the old mode. slurmd
        # learns the new one when it restarts (it asks `cs slurm features`).
        slurm_has = ",".join(sorted(node.active_features)) or "no feature"
        return Verdict(False, f"{serial} runs {snap['activeExecmode']} but Slurm has {slurm_has}: restart slurmd")
    return Verdict(True, f"{serial} ACTIVE in {snap['activeExecmode']}, systemHealth {health}")


def decide(node: Node, verdict: Verdict) -> Action:
    ours = is_ours(node.reason)
    if node.down:
        return Action("leave", None, f"node is DOWN ({node.reason or 'no reason'}); Slurm resumes it, not the health check")
    if verdict.ok:
        if node.drained and ours:
            return Action("resume", None, f"{verdict.what}: resuming (it was drained: {node.reason})")
        if node.drained:
            return Action("leave", None, f"{verdict.what}; the node stays drained: {node.reason!r} is not the health check's")
        return Action("keep", None, verdict.what)
    wanted = reason(verdict.what)
    if node.drained and not ours:
        return Action("leave", None, f"{verdict.what}; the node is already drained for another reason: {node.reason!r}")
    if node.drained and node.reason == wanted:
        return Action("keep", None, f"still drained: {wanted}")
    return Action("drain", wanted, f"draining: {wanted}")
