"""`cerebras.appliance.utils.file`: create_symlink (ModelZoo points `latest` links at a run's
artifact folder and log with it), is_pathlike, get_path_size, and CachingFileOpener, which keeps
a checkpoint open while a reader of it lives."""

from __future__ import annotations

import os
import time
from pathlib import Path


def is_pathlike(name) -> bool:
    """Whether `name` is a str or os.PathLike."""
    return isinstance(name, (str, os.PathLike))


def get_path_size(path, recursive: bool = True) -> int:
    """The bytes of the file at `path`, or of the files under the folder (recursive: in its
    subfolders too; links are not followed)."""
    path = Path(path)
    if path.is_file():
        return path.stat().st_size
    walk = path.rglob("*") if recursive else path.glob("*")
    return sum(p.lstat().st_size for p in walk if p.is_file() and not p.is_symlink())


def create_symlink(src, dst, num_retries: int = 5, **kwargs) -> None:
    """Make `src` a link to `dst`, replacing a link or file already at `src`. Parallel runs may
    race to replace it: each try that fails with an OSError is retried after half a second, and
    the last one's error is raised."""
    src = Path(src)
    for _ in range(num_retries):
        try:
            src.unlink(missing_ok=True)
            src.symlink_to(dst, **kwargs)
            return
        except OSError:
            time.sleep(0.5)  # another process is replacing the same link; let it finish
    src.unlink(missing_ok=True)
    src.symlink_to(dst, **kwargs)


class CachingFileOpener:
    """Opens a file once per path and mode, and hands out the same open file after that, so that
    a file read lazily stays readable while in use even if its path is removed."""

    def __init__(self):
        self._files: dict = {}

    def __call__(self, path, mode: str = "rb"):
        key = (os.path.realpath(path), mode)
        found = self._files.get(key)
        if found is None or found.closed:
            found = self._files[key] = open(path, mode)  # noqa: SIM115  (kept open by design)
        return found
