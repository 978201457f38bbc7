"""Replacing a file whole and durably: the new content is written beside it under a temporary
name, fsynced, renamed over it, and the directory fsynced, so the rename itself survives a power
loss. A reader sees the old file or the new one, never a part of either; a write that fails
removes its temporary file and leaves the old file as it was.

Every file csadmin writes goes through here: csd's connection, identity and key registry files,
the CURVE key files, the rendezvous files, the launchers' reports, a run's performance.json, and
cstorch's program files, records and checkpoints. Stdlib only (os); the client and the one-shot
`cs` never load it (keyfile and connection import it only when they write).
"""

from __future__ import annotations

import os


def write_atomically(path: str, data: bytes | str, mode: int | None = None) -> None:
    """Replace `path` with `data` (a str is written as UTF-8). `mode` gives the file exactly those
    permissions whatever the umask, from its first byte (a secret is 0o600 before anything is in
    it); None makes it as `open()` would (0o666 less the umask)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    with Replacing(path) as temporary:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if mode is None else mode)
        with os.fdopen(fd, "wb") as f:
            if mode is not None:
                os.fchmod(fd, mode)  # still empty, and the umask only ever narrowed it
            f.write(data)


class Replacing:
    """`with Replacing(path) as temporary:` write the new file at `temporary` (a path beside
    `path`, for a library that opens the file itself, such as h5py); when the block ends without
    an error, the file is fsynced, renamed over `path` and the directory fsynced. If the block
    raises, the temporary file is removed and `path` is left as it was."""

    def __init__(self, path: str):
        self.path = os.fspath(path)
        self.directory = os.path.dirname(os.path.abspath(self.path))
        name = os.path.basename(self.path)
        self.temporary = os.path.join(self.directory, f".{name}.{os.urandom(4).hex()}.tmp")

    def __enter__(self) -> str:
        return self.temporary

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            try:
                fsync(self.temporary)
                os.replace(self.temporary, self.path)
            except BaseException:
                self._remove()
                raise
            fsync(self.directory)
        else:
            self._remove()

    def _remove(self) -> None:
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass


def fsync(path: str) -> None:
    """Flush `path` (a file or a directory) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
