"""Which csd `cs` talks to when a system is named: `--system NAME`, else `$CS_SYSTEM` (unless
`--connect` / `--endpoint` say otherwise), looked up in the inventory (csadmin/clientlib/inventory.py).
Read only when a system is named: the one-shot path without one never imports the inventory."""

from __future__ import annotations

import os
from typing import NamedTuple

from .. import errors


class Target(NamedTuple):
    system: str
    endpoint: str | None
    server_key: str | None
    connect: str | None
    key: str | None


def named_system(flag: str | None, connect: str | None, endpoint: str | None, server_key: str | None) -> str | None:
    """The system named by `--system` (`flag`) or `$CS_SYSTEM`; UsageError if `--system` comes
    with an explicit connection too (which one was meant?)."""
    if flag is not None:
        if connect or endpoint or server_key:
            raise errors.UsageError("--system names the system to use: give it without --connect, --endpoint "
                                    "or --server-key.", "Drop one or the other (`cs inventory` lists the names).")
        return flag
    if connect or endpoint:
        return None  # an explicit connection on the command line beats the environment's system
    return os.environ.get("CS_SYSTEM") or None


def resolve(name: str) -> Target:
    """Where system `name` is and the key to use for it (None: the default key). Its connection
    file is read now when it can be (so $CS_ENDPOINT / $CS_SERVER_KEY cannot redirect it); if
    it cannot, the first request says why."""
    from ..fleet.connect import endpoint_and_key
    from ..clientlib.inventory import load

    system = load().find(name)
    try:
        endpoint, server_key = endpoint_and_key(system)
    except errors.Unreachable:
        endpoint, server_key = system.endpoint, system.server_key
    return Target(system.name, endpoint, server_key, system.connect, system.key)
