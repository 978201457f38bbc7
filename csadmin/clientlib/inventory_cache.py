"""The inventory's TOML, parsed once per edit: what `tomllib` made of a file's exact text, kept as
JSON in the user's cache directory (stdlib only).

Importing and running `tomllib` costs a `cs --system NAME` or `cs fleet show` ~3 ms, more than a
tenth of what the fleet path adds to a one-shot; the JSON module is loaded anyway. An entry holds
the file's whole text beside the document parsed from it and is used only when that text is the
text read now, byte for byte: no timestamps, so an edit is never missed however fast it follows
the last read. A document JSON cannot hold as it is (a TOML date) is not cached.

It is a cache: a missing, unreadable, damaged or stale entry means parsing the file again, and a
directory that cannot be written means not caching; nothing here raises. Entries live in
`$XDG_CACHE_HOME/cs/` (~/.cache/cs/), one per inventory path, mode 0600.
"""

from __future__ import annotations

import json
import os
import zlib


def directory() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "cs")


def _entry(path: str) -> str:
    where = os.path.abspath(path)
    return os.path.join(directory(), f"inventory-{zlib.crc32(where.encode('utf-8', 'surrogateescape')):08x}.json")


def lookup(path: str, text: str) -> dict | None:
    """The document parsed earlier from exactly `text` at `path`, or None."""
    try:
        with open(_entry(path), encoding="utf-8") as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("path") != os.path.abspath(path) or entry.get("text") != text:
        return None
    doc = entry.get("doc")
    return doc if isinstance(doc, dict) else None


def store(path: str, text: str, doc: dict) -> None:
    """Remember `doc` as what `text` at `path` parses to (atomically; quietly not, if it cannot)."""
    try:
        body = json.dumps({"path": os.path.abspath(path), "text": text, "doc": doc}, allow_nan=False)
    except (TypeError, ValueError):  # a TOML date or an inf/nan: parse it each time instead
        return
    target = _entry(path)
    temp = f"{target}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(body)
        os.replace(temp, target)  # no fsync: a torn entry after a crash is only a miss
    except OSError:
        try:
            os.unlink(temp)
        except OSError:
            pass
