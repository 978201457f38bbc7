"""Whether a launcher runs its job under Slurm, and running a command there (or here).

A cluster is configured when `sinfo` is on PATH and answers (`sinfo -h -o %P` exits 0 within
SINFO_TIMEOUT seconds: it reads $SLURM_CONF or /etc/slurm/slurm.conf and reaches slurmctld).
Inside an allocation already ($SLURM_JOB_ID set: the launcher itself runs as a job) the command
runs here, in it. Otherwise it runs locally. `--local` on the command line skips the question.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

SINFO_TIMEOUT = 10


def slurm_configured(env: dict | None = None) -> bool:
    env = os.environ if env is None else env
    if env.get("SLURM_JOB_ID") or shutil.which("sinfo", path=env.get("PATH")) is None:
        return False
    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, env=dict(env),
                              stdin=subprocess.DEVNULL, timeout=SINFO_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and bool(done.stdout.strip())


def run(cmd: list[str], env: dict) -> int:
    """Run `cmd` with its output passed straight through; return its exit status (128+N for a
    signal, as a shell says). Ctrl-C reaches it too (same process group); we wait for it to end
    so that srun can cancel its job step and the script can close its run."""
    try:
        proc = subprocess.Popen(cmd, env=env)
    except OSError as exc:
        print(f"{os.path.basename(sys.argv[0])}: cannot run {cmd[0]}: {exc.strerror}", file=sys.stderr)
        return 127
    return run_wait(proc)


def run_wait(proc: subprocess.Popen) -> int:
    """Wait for `proc` (through Ctrl-C, which it got too); its exit status as a shell says it."""
    while True:
        try:
            status = proc.wait()
            break
        except KeyboardInterrupt:
            continue  # the child got the same SIGINT; its exit status says how it ended
    return 128 + -status if status < 0 else status
