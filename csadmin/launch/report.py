"""compile_report.txt: what a compile produced, "in the directory where you compiled" (002).

The compile describes itself in a record (csadmin/cstorch/core/artifacts.py `record`, JSON); this
module turns it into the report, one `key: value` per line so that people read it and tools
(cs_input_analyzer) parse it back with `read_report`.
"""

from __future__ import annotations

import json
import os
import time

from csadmin import errors
from csadmin.shared.atomic_write import write_atomically

REPORT = "compile_report.txt"
FIELDS = ("script", "mode", "checksum", "target_system", "directory", "cached", "est_samples_per_sec",
          "batch_size", "compile_time", "size_bytes", "ops", "step", "run_mode", "execmode")


def read_record(path: str) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_text(path: str, text: str) -> None:
    """Write `text` to `path` atomically and durably (readable by all: reports are not secrets)."""
    write_atomically(path, text.encode(), 0o644)


def render(record: dict, script: str) -> str:
    values = dict(record, script=script, checksum=f"sha256:{record['checksum']}",
                  cached="yes" if record.get("cached") else "no")
    lines = [f"# compile report: {script}, {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
             "# estimated performance of the compiled program on the system it was compiled for;",
             "# compile_time with cached: yes is the capture and the artifacts' lookup only."]
    lines += [f"{key}: {values[key]}" for key in FIELDS if values.get(key) is not None]
    return "\n".join(lines) + "\n"


def write_report(directory: str, record: dict, script: str) -> str:
    """Write compile_report.txt into `directory`; return its path."""
    path = os.path.join(directory, REPORT)
    write_text(path, render(record, script))
    return path


def read_report(path: str) -> dict:
    """The `key: value` lines of a compile report; UsageError if there is none to read."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as exc:
        raise errors.UsageError(f"cannot read {path}: {exc.strerror}.",
                                "Compile first (`csrun_cpu … --mode compile_only`) in this directory, "
                                "or pass --compile-report FILE.") from None
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        if sep and not key.startswith("#"):
            values[key.strip()] = value.strip()
    if "est_samples_per_sec" not in values:
        raise errors.UsageError(f"{path} has no est_samples_per_sec (a validate_only run estimates nothing).",
                                "Compile with --mode compile_only first.")
    return values
