"""`csrun_cpu [--cs_ip SYSTEM] [--local] python SCRIPT [ARGS…] [--mode MODE]`: run a cstorch
script on a CPU node — under Slurm (`srun`, one task, no wafer) when a cluster is configured
(csadmin/launch/cluster.py), here otherwise — typically to validate it (`--mode validate_only`)
or compile it (`--mode compile_only`) before it goes to the system.

`--cs_ip SYSTEM` compiles for that system (an inventory name, csd's connection file or an
endpoint): the script's cstorch.compile checks it and the artifacts record its serial, so a
later run on it reuses them. After a compile, compile_report.txt is written in the current
directory (the estimate, the program's checksum, the system's serial, the artifacts' directory);
the artifacts stay in the script's compile_dir. The exit status is the script's.
"""

from __future__ import annotations

import os
import sys
import tempfile

from csadmin import errors

from . import cluster
from .args import launcher, mode_of, split_script, take_option
from .report import read_record, write_report
from .system import system_env

USAGE = "usage: csrun_cpu [--cs_ip SYSTEM] [--local] python SCRIPT [ARGS...] [--mode validate_only|compile_only|train|eval]"


def script_command(script: list[str]) -> list[str]:
    """This installation's Python running the script under the cstorch API names."""
    return [sys.executable, "-m", "csadmin.cstorch", *script]


@launcher(USAGE, __doc__)
def main(argv: list[str]) -> int:
    try:
        own, _, script = split_script(argv, ("python",), USAGE)
        system, own = take_option(own, "--cs_ip")
        local = "--local" in own
        own = [o for o in own if o != "--local"]
        if own:
            raise errors.UsageError(f"unknown option(s) {' '.join(own)}.", USAGE)
        in_script, script = take_option(script, "--cs_ip")
        mode, script = mode_of(script)
        env = dict(os.environ, **system_env(system or in_script))
        if not os.path.isfile(script[0]):
            raise errors.UsageError(f"no such script: {script[0]}.", USAGE)
    except errors.CsError as exc:
        print(f"csrun_cpu: {exc}", file=sys.stderr)
        return exc.exit_code
    try:  # compile_report.txt goes here: find out now that it cannot, not after the compile
        fd, record_path = tempfile.mkstemp(prefix=".csrun_cpu-", suffix=".json", dir=os.getcwd())
    except OSError as exc:
        print(f"csrun_cpu: cannot write in the current directory: {exc.strerror}. compile_report.txt is written in the "
              "directory where you compile: cd to one you can write to.", file=sys.stderr)
        return errors.EXIT_USAGE
    os.close(fd)
    os.unlink(record_path)  # the script creates it (on the shared filesystem: it may run elsewhere)
    env["CSTORCH_COMPILE_RECORD"] = record_path
    if mode is not None:
        env["CSTORCH_MODE"] = mode
    cmd = script_command(script)
    if not local and cluster.slurm_configured(env):
        cmd = ["srun", "--nodes=1", "--ntasks=1", "--job-name=csrun_cpu", *cmd]
    try:
        status = cluster.run(cmd, env)
        record = read_record(record_path)
    finally:
        if os.path.exists(record_path):
            os.unlink(record_path)
    if status == 0 and record is not None:
        summarize(record, script[0])
    return status


def summarize(record: dict, script: str) -> None:
    if record["mode"] == "validate_only":
        print(f"csrun_cpu: validated {script}: step {record['step']!r}, batch size {record['batch_size']}, "
              f"{record['ops']} ops (nothing compiled, the system untouched)", file=sys.stderr)
        return
    path = write_report(os.getcwd(), record, script)
    what = "reused cached artifacts" if record.get("cached") else "compiled"
    print(f"csrun_cpu: {what} for {record.get('target_system') or 'no system'}: {record['directory']}; "
          f"est_samples_per_sec {record['est_samples_per_sec']}; report in {path}", file=sys.stderr)
