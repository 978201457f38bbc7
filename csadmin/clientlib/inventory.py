"""The inventory: a site's CS-2 systems by name, for `--system NAME`, the shell's `use NAME` and
the `fleet` commands (stdlib only; read only when a system is named or the fleet is asked for).

A TOML file, the first that exists of:
  1. `$CS_INVENTORY` (a file named explicitly: it must exist);
  2. `$XDG_CONFIG_HOME/cs/systems.toml` (~/.config/cs/systems.toml): the user's own;
  3. `/etc/cs/systems.toml`: the site's, for every user of the host.
The first found is the whole inventory (files are not merged: what `cs inventory` lists is one
file, named in its output). One table per system:

    [systems.cs2-a]
    connect = "/run/csd/csd.json"          # csd's connection file, or:
    # endpoint = "tcp://cs2-a.lab:5555"    # its request endpoint, with
    # server_key = "<40 Z85 characters>"   # csd's public key
    key = "~/.config/cs/lab.key_secret"    # optional: this system's own client key
    tags = ["lab", "weight-streaming"]     # optional: for `cs fleet show --tag lab`

Relative paths are relative to the inventory file; `~` is expanded. Without `key`, a system is
reached with the key `cs` uses anyway (`--key`, `$CS_KEY`, ~/.config/cs/client.key_secret).
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple

from .. import errors
from ..shared.keyfile import valid_z85_key
from . import inventory_cache

SYSTEM_WIDE = "/etc/cs/systems.toml"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")
_KEYS = {"connect", "endpoint", "server_key", "key", "tags"}


class System(NamedTuple):
    """One named system: how to reach it (a connection file, or an endpoint and server key),
    the client key to use (None: the default one) and its tags."""

    name: str
    connect: str | None = None
    endpoint: str | None = None
    server_key: str | None = None
    key: str | None = None
    tags: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """Where it is, for people: its connection file or endpoint."""
        return self.connect or self.endpoint or ""


class Inventory(NamedTuple):
    path: str
    systems: tuple[System, ...]

    def find(self, name: str) -> System:
        """The system called `name`; NotFound suggesting the closest name otherwise."""
        for system in self.systems:
            if system.name == name:
                return system
        import difflib  # error path only

        names = [s.name for s in self.systems]
        close = difflib.get_close_matches(name[:64], names, n=1, cutoff=0.5)
        shown = name if len(name) <= 40 else name[:39] + "…"
        hint = f"Did you mean `{close[0]}`? " if close else ""
        raise errors.NotFound(f"No system `{shown}` in the inventory {self.path}.",
                              f"{hint}`cs inventory` lists them: {', '.join(names) or 'none yet'}.")

    def select(self, names: list[str] | None = None, tags: list[str] | None = None) -> list[System]:
        """The systems named (in that order; each must exist), else all of them; with `tags`,
        only those carrying every tag listed."""
        chosen = [self.find(n) for n in names] if names else list(self.systems)
        if tags:
            chosen = [s for s in chosen if set(tags) <= set(s.tags)]
        return chosen


def candidates() -> list[str]:
    """The files looked for, in order (the first that exists is the inventory)."""
    explicit = os.environ.get("CS_INVENTORY")
    if explicit:
        return [explicit]
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return [os.path.join(base, "cs", "systems.toml"), SYSTEM_WIDE]


def load() -> Inventory:
    """Read the inventory (see the module's docstring for where); UsageError naming the file
    and the mistake if it is malformed, NotFound if there is none."""
    paths = candidates()
    for path in paths:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            continue
        except OSError as exc:
            raise errors.UsageError(f"Cannot read the inventory {path}: {exc.strerror}.",
                                    "Check its permissions, or point CS_INVENTORY at another file.") from None
        return parse(data, path)
    raise errors.NotFound(
        f"No inventory of systems: none of {', '.join(paths)} exists.",
        "Write one (README, \"Several systems\") with a [systems.NAME] table per CS-2, "
        "or set CS_INVENTORY to its path.",
    )


def parse(data: bytes, path: str) -> Inventory:
    def bad(problem: str) -> errors.UsageError:
        return errors.UsageError(f"The inventory {path} is not valid: {problem}.",
                                 "Fix the file (README, \"Several systems\", shows its format).")

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(str(exc)) from None
    doc = inventory_cache.lookup(path, text)
    if doc is None:
        import tomllib  # ~3 ms: only when a system is named and this text was not parsed before

        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise bad(str(exc)) from None
        inventory_cache.store(path, text, doc)
    unknown = set(doc) - {"systems"}
    if unknown:
        raise bad(f"unknown top-level key(s) {', '.join(sorted(unknown))} (only [systems.NAME] tables)")
    tables = doc.get("systems", {})
    if not isinstance(tables, dict):
        raise bad("`systems` must be a table of [systems.NAME] tables")
    base = os.path.dirname(os.path.abspath(path))
    systems = []
    for name, table in tables.items():
        if not _NAME.fullmatch(name):
            raise bad(f"system name {name!r} must be letters, digits, '.', '_' or '-' (at most 63)")
        if not isinstance(table, dict):
            raise bad(f"[systems.{name}] must be a table")
        systems.append(_system(name, table, base, bad))
    return Inventory(path, tuple(systems))


def _system(name: str, table: dict, base: str, bad) -> System:
    unknown = set(table) - _KEYS
    if unknown:
        raise bad(f"[systems.{name}] has unknown key(s) {', '.join(sorted(unknown))}; "
                  f"known: {', '.join(sorted(_KEYS))}")
    for key in _KEYS - {"tags"}:
        if key in table and not (isinstance(table[key], str) and table[key]):
            raise bad(f"[systems.{name}] {key} must be a non-empty string")
    tags = table.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and _NAME.fullmatch(t) for t in tags):
        raise bad(f"[systems.{name}] tags must be a list of names (letters, digits, '.', '_', '-')")
    connect, endpoint, server_key = table.get("connect"), table.get("endpoint"), table.get("server_key")
    if bool(connect) == bool(endpoint):
        raise bad(f"[systems.{name}] needs either connect (csd's connection file) or endpoint (with server_key)")
    if endpoint and not server_key:
        raise bad(f"[systems.{name}] endpoint needs server_key (csd's public key)")
    if server_key and not valid_z85_key(server_key):
        raise bad(f"[systems.{name}] server_key is not a server key (40 Z85 characters)")

    def file(value: str | None) -> str | None:
        return None if value is None else os.path.join(base, os.path.expanduser(value))

    return System(name, file(connect), endpoint, server_key, file(table.get("key")), tuple(tags))
