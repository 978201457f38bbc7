"""Where the hooks' messages go. Slurm throws away what its scripts print (except the features
a node-features helper prints on stdout), so each line also goes to syslog (`journalctl -t
cs-slurm`) and, if `$CS_SLURM_LOG` names a file, is appended there with a timestamp."""

from __future__ import annotations

import os
import sys
import syslog
import time

IDENT = "cs-slurm"


class Reporter:
    """Say what a hook did or why it failed, to every place an admin may look."""

    def __init__(self, hook: str):
        self.hook = hook
        syslog.openlog(IDENT, syslog.LOG_PID, syslog.LOG_DAEMON)

    def __call__(self, message: str, error: bool = False) -> None:
        # Never a traceback for a character the terminal, syslog or the file cannot take.
        line = f"cs slurm {self.hook}: {message}".encode("utf-8", "backslashreplace").decode("utf-8")
        print(line, file=sys.stderr, flush=True)
        syslog.syslog(syslog.LOG_ERR if error else syslog.LOG_INFO, line)
        path = os.environ.get("CS_SLURM_LOG")
        if path:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
            try:
                with open(path, "a", encoding="utf-8") as f:
                    f.write(f"{stamp} [{os.getpid()}] {line}\n")
            except OSError as exc:  # a bad log path must not fail the hook
                print(f"cs slurm {self.hook}: cannot write {path}: {exc}", file=sys.stderr)
