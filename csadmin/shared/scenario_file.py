"""Reading a fault scenario file, for csd (`--faults FILE`, `faults_scenario`) and for `cs system
fault scenario FILE` (which checks before it sends): the same bounds on both paths
(csadmin/shared/scenario_limits.py), in bounded time and memory whatever the path names.

`read(path)` returns the file's text, or raises errors.UsageError naming the file and what is
wrong: it cannot be opened or read, it is over MAX_BYTES (at most MAX_BYTES + 1 bytes are ever
read, so /dev/zero or a 41 MB file cost no more than a small one), it is not UTF-8 text, or
its arrays and inline tables nest deeper than MAX_NESTING. A directory or a FIFO with no writer
does not block the read: the file is opened non-blocking; a pipe with a writer (`<(…)`) is read.
"""

from __future__ import annotations

import fcntl
import os
import stat

from .. import errors
from .scenario_limits import MAX_BYTES, problem, too_large

HINT = 'docs/operations.md, "Fault scenarios", describes the file and its limits.'


def read(path: str, shown: str | None = None) -> str:
    """The text of the scenario file at `path` (`shown`: how messages name it, default `path`)."""
    name = shown if shown is not None else path
    data = _read_bounded(path, name)
    if len(data) > MAX_BYTES:
        raise errors.UsageError(f"The fault scenario {too_large(name)}.", HINT)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise errors.UsageError(f"The fault scenario {name} is not UTF-8 text (line {line}, byte {exc.start + 1}).",
                                "Save it as UTF-8; a scenario is a TOML text file.") from None
    found = problem(text, name)
    if found is not None:
        line, message = found
        where = f"{name}, line {line}" if line else name
        raise errors.UsageError(f"The fault scenario cannot be used: {where}: {message}.", HINT)
    return text


def _read_bounded(path: str, name: str) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise _unreadable(name, exc) from None
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise errors.UsageError(f"Cannot read the scenario file {name}: it is a directory.", HINT)
        # Blocking reads from here: a pipe with a writer is read to its end (or to the bound).
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        chunks, size = [], 0
        while size <= MAX_BYTES:
            chunk = os.read(fd, MAX_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _unreadable(name, exc) from None
    finally:
        os.close(fd)


def _unreadable(name: str, exc: Exception) -> errors.UsageError:
    reason = getattr(exc, "strerror", None) or str(exc)
    return errors.UsageError(f"Cannot read the scenario file {name}: {reason}.", HINT)
