"""`--cs_ip SYSTEM`: which csd a launched script talks to, as environment variables for it.

SYSTEM is, in this order: an existing file (csd's connection file), an endpoint (`tcp://…`,
`ipc://…`; csd's public key from `$CS_SERVER_KEY`), `HOST:PORT` (the seeds' "CS IP", taken as
`tcp://HOST:PORT`), or a name in the inventory (csadmin/clientlib/inventory.py). Nothing is contacted here:
the script's cstorch.compile asks the system and refuses what it cannot use.
"""

from __future__ import annotations

import os
import re

from csadmin import errors

_HOST_PORT = re.compile(r"[A-Za-z0-9.-]+:\d{1,5}")


def system_env(system: str | None) -> dict[str, str]:
    """The variables that point a cstorch script at SYSTEM ({} for None: the script's own)."""
    if system is None:
        return {}
    if not system.strip() or any(not c.isprintable() for c in system):
        raise errors.UsageError(f"--cs_ip {system!r} is not a system.",
                                "Give an inventory name (`cs inventory`), csd's connection file or an endpoint.")
    if os.path.isfile(system):
        return {"CS_CONNECT": os.path.abspath(system)}
    if "://" in system:
        return {"CS_CONNECT": system}
    if _HOST_PORT.fullmatch(system):
        return {"CS_CONNECT": f"tcp://{system}"}
    from csadmin.clientlib.inventory import load

    try:
        found = load().find(system)  # NotFound naming the closest name
    except errors.CsError as exc:
        raise type(exc)(f"--cs_ip {system!r} is not a file, an endpoint or HOST:PORT, nor a system of the "
                        f"inventory: {exc.message}", exc.hint) from None
    env = {}
    if found.connect:
        env["CS_CONNECT"] = found.connect
    else:
        env["CS_CONNECT"] = found.endpoint
        if found.server_key:
            env["CS_SERVER_KEY"] = found.server_key
    if found.key:
        env["CS_KEY"] = found.key
    return env
