"""Reusing compiled artifacts: compile_dir/cs_<checksum> from an earlier compile (002, "Using
compiled artifacts"; 000: "when you compile your model on one CS system, you cannot run this
compiled model on another").

The step is always captured (the checksum is the captured program's), so what a reuse skips is
the compile proper: the estimate's executions and writing the artifacts. `lookup` answers, for
a freshly captured program, whether compile_dir already holds it:

  * nothing there (or a directory without a readable program.json): compile as usual;
  * compiled for this system (its serial in the descriptor's target_system): reuse — the
    artifact's est_samples_per_sec is the program's, and the run reports it as cached;
  * compiled for another system: IncompatibleProgram with the seed's rule, before any run opens.

An artifact whose target_system is "(not checked)" (a compile that never reached a system) is
not reused for a system: it is compiled again, for that system, over it.
"""

from __future__ import annotations

import json
import os
from typing import NamedTuple

from csadmin.errors import IncompatibleProgram

# 000, "Compilation differences".
OTHER_SYSTEM_RULE = "when you compile your model on one CS system, you cannot run this compiled model on another"
NOT_CHECKED = "(not checked)"


class Cached(NamedTuple):
    directory: str
    target_system: str
    est_samples_per_sec: float
    compile_time: float  # of the compile that made the artifacts


def _directory_for(compile_dir: str, checksum: str) -> str:
    return os.path.join(compile_dir, f"cs_{checksum[:16]}")


def _read_descriptor(directory: str) -> dict | None:
    """The descriptor in `directory`/program.json, or None when there is none to trust."""
    try:
        with open(os.path.join(directory, "program.json"), encoding="utf-8") as f:
            descriptor = json.load(f)["descriptor"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return descriptor if isinstance(descriptor, dict) else None


def lookup(compile_dir: str, checksum: str, serial: str | None) -> Cached | None:
    """The reusable artifacts of program `checksum` for system `serial`, None if it must be
    compiled; raises IncompatibleProgram if they were compiled for another system."""
    directory = _directory_for(compile_dir, checksum)
    descriptor = _read_descriptor(directory)
    if descriptor is None or descriptor.get("fingerprint") != f"sha256:{checksum}":
        return None
    target = str(descriptor.get("target_system", NOT_CHECKED))
    if serial is None or target == NOT_CHECKED:
        return None
    if target != serial:
        raise IncompatibleProgram(
            f"The compiled artifacts in {directory} were compiled for system {target}, not {serial}: "
            f"{OTHER_SYSTEM_RULE}.",
            f"Compile again for {serial} (`csrun_cpu --cs_ip {serial} … --mode compile_only`) into another "
            f"compile_dir, or run on {target}.")
    try:
        est = float(descriptor["est_samples_per_sec"])
        compile_time = float(descriptor.get("compile_time", 0.0))
    except (KeyError, TypeError, ValueError):
        return None
    return Cached(directory, target, est, compile_time)


# The launchers (csadmin/launch) name a file here; the compile describes itself in it, for
# compile_report.txt and cs_input_analyzer. Unset: nothing is written.
RECORD_ENV = "CSTORCH_COMPILE_RECORD"


def record(config, program, serial: str | None, cached: bool) -> None:
    """Write what was compiled (or validated) under `config` to $CSTORCH_COMPILE_RECORD, if a
    launcher asked."""
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    from csadmin.shared.atomic_write import write_atomically


    mode = "validate_only" if config.validate_only else "compile_only" if config.compile_only else "run"
    write_atomically(path, json.dumps({
        "mode": mode, "step": program.name, "run_mode": program.mode, "execmode": program.execmode,
        "checksum": program.checksum, "directory": program.directory, "target_system": serial,
        "batch_size": program.batch_size, "ops": program.op_count, "size_bytes": program.size_bytes,
        "est_samples_per_sec": None if config.validate_only else program.est_samples_per_sec,
        "compile_time": round(program.compile_time, 6), "cached": cached,
    }, indent=2) + "\n")
