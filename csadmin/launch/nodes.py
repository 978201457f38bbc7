"""Which Slurm node a CS-2 hangs off: the node whose `cs-slurm.NODE.env` (or, with one node, whose
`cs-slurm.env`) names the same csd (docs/slurm.md, "Several nodes"): those files sit beside the
cluster's slurm.conf ($SLURM_CONF, default /etc/slurm/slurm.conf)."""

from __future__ import annotations

import glob
import os
import re

DEFAULT_CONF = "/etc/slurm/slurm.conf"
_CONNECT = re.compile(r"^\s*(?:export\s+)?CS_CONNECT=(['\"]?)(.*?)\1\s*$", re.M)


def _connect_of(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            found = _CONNECT.findall(f.read())
    except OSError:
        return None
    return found[-1][1] if found else None


def _same(a: str, b: str) -> bool:
    return a == b or ("://" not in a and "://" not in b and os.path.realpath(a) == os.path.realpath(b))


def node_of(connect: str, env: dict) -> str | None:
    """The node attached to csd `connect` (a connection file or endpoint); None if no node's
    settings name it (then Slurm chooses among the nodes with a wafer)."""
    etc = os.path.dirname(env.get("SLURM_CONF") or DEFAULT_CONF)
    for path in sorted(glob.glob(os.path.join(etc, "cs-slurm.*.env"))):
        value = _connect_of(path)
        if value and _same(value, connect):
            return os.path.basename(path)[len("cs-slurm."):-len(".env")]
    return None
