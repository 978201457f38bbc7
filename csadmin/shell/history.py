"""Where the shell keeps its history: `$XDG_STATE_HOME/csadmin/history` (~/.local/state/…)."""

from __future__ import annotations

import os

from prompt_toolkit.history import FileHistory, History, InMemoryHistory


def history_path() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
    return os.path.join(base, "csadmin", "history")


def shell_history() -> History:
    path = history_path()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a"):
            pass
    except OSError:
        return InMemoryHistory()  # a read-only home must not stop the shell
    return FileHistory(path)
