"""Making slurmd report the reboot Slurm asked for, once the reboot program activated the CS-2.

To change a node's features, Slurm "reboots" the node and waits (ResumeTimeout) for slurmd to
register with a boot time after the request. On a CS-2's node the reboot is the CS-2's: the host
keeps running, so slurmd must be restarted with `-b` ("report node rebooted") — that one time
only, since a restart with `-b` at any other moment looks like an unexpected reboot to Slurm,
which downs the node and kills its jobs.

slurmd runs the reboot program and waits for it, so the restart is done by a detached process
that first waits for the reboot program (and the shell slurmd started it with) to exit:
- slurmd under systemd (its cgroup is slurmd.service): `systemctl set-environment
  CS2_SLURMD_FLAGS=-b`, `systemctl restart slurmd`, `systemctl unset-environment …`; the unit
  needs the drop-in slurm/slurmd-cs2.conf, which adds $CS2_SLURMD_FLAGS to its command line;
- otherwise (slurmd started by hand or by a test): stop it and start it again with the same
  command line and environment, plus `-b`.

`python -m csadmin.slurm.slurmd SLURMD_PID WAIT_PID…` is the detached restarter.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

from .report import Reporter
from .scontrol import environment

SYSTEMD_FLAGS_VAR = "CS2_SLURMD_FLAGS"
STOP_SECONDS = 60.0  # for the old slurmd to exit before it is killed
WAIT_SECONDS = 120.0  # for the reboot program to exit


def _stat(pid: int) -> tuple[str, str, int] | None:
    """(comm, state, ppid) of a process, or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    state, ppid = text[text.rindex(")") + 2:].split()[:2]
    return comm, state, int(ppid)


def alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[1] not in ("Z", "X")  # a zombie has exited


def ancestors() -> list[int]:
    """This process's parent, grandparent, …, nearest first (up to, not including, pid 1)."""
    chain, pid = [], os.getppid()
    while pid > 1 and (stat := _stat(pid)) is not None:
        chain.append(pid)
        pid = stat[2]
    return chain


def find_slurmd() -> tuple[int, list[int]] | None:
    """slurmd's pid among this process's ancestors, and the ancestors below it (the shell it
    started us with), or None when slurmd did not run us."""
    below = [os.getpid()]
    for pid in ancestors():
        name = _stat(pid)[0]
        if name == "slurmd" or name.startswith("slurmd-"):  # Debian's binary is slurmd-wlm
            return pid, below
        below.append(pid)
    return None


def under_systemd(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return "/slurmd.service" in f.read()
    except OSError:
        return False


def systemd_unit_ready() -> str | None:
    """None if slurmd.service passes $CS2_SLURMD_FLAGS to slurmd, else what to do about it."""
    try:
        shown = subprocess.run(["systemctl", "show", "-p", "ExecStart", "slurmd.service"], capture_output=True,
                               text=True, timeout=20, env=environment()).stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot ask systemd about slurmd.service: {exc}"
    if SYSTEMD_FLAGS_VAR not in shown:
        return (f"slurmd.service does not pass ${SYSTEMD_FLAGS_VAR} to slurmd, so it cannot report the reboot: "
                "install slurm/slurmd-cs2.conf as /etc/systemd/system/slurmd.service.d/cs2.conf and "
                "`systemctl daemon-reload` (docs/slurm.md)")
    return None


def spawn_restarter(slurmd_pid: int, wait_for: list[int]) -> None:
    """Start the detached process that restarts slurmd once `wait_for` have exited."""
    subprocess.Popen(
        [sys.executable, "-m", "csadmin.slurm.slurmd", str(slurmd_pid), *map(str, wait_for)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True, close_fds=True, cwd="/",
    )


def _wait_gone(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def restart_with_systemd(say: Reporter) -> bool:
    env = environment()
    run = lambda *args: subprocess.run(["systemctl", *args], capture_output=True, text=True, timeout=120, env=env)  # noqa: E731
    try:
        run("set-environment", f"{SYSTEMD_FLAGS_VAR}=-b")
        done = run("restart", "slurmd.service")
    finally:
        run("unset-environment", SYSTEMD_FLAGS_VAR)
    if done.returncode != 0:
        say(f"`systemctl restart slurmd` failed: {done.stderr.strip()}", error=True)
        return False
    say("slurmd restarted by systemd with -b: it reports the reboot to slurmctld")
    return True


def restart_in_place(pid: int, say: Reporter) -> bool:
    """Stop slurmd `pid` and start it again with its own command line and environment, plus -b."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.decode(errors="replace").partition("=")[::2] for e in f.read().split(b"\0") if b"=" in e)
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError as exc:
        say(f"cannot read slurmd's command line (pid {pid}): {exc}", error=True)
        return False
    args = argv[1:] + ([] if "-b" in argv[1:] else ["-b"])
    os.kill(pid, signal.SIGTERM)
    if not _wait_gone([pid], STOP_SECONDS):
        say(f"slurmd (pid {pid}) did not stop within {STOP_SECONDS:g} s of SIGTERM; killing it", error=True)
        os.kill(pid, signal.SIGKILL)
        _wait_gone([pid], 10)
    # argv[0] as it was: slurmd reads its own name from it (started as `slurmd-wlm`, the Debian
    # binary's real name, it no longer finds its node's GRES in slurm.conf).
    started = subprocess.Popen([argv[0], *args], executable=exe, env=env, cwd="/", stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        code = started.wait(timeout=30)  # slurmd daemonizes: the parent returns once it is up
    except subprocess.TimeoutExpired:
        code = 0  # running in the foreground (-D): it is up
    if code != 0:
        say(f"slurmd did not start again (`{' '.join([argv[0], *args])}` exited {code}); see its log", error=True)
        return False
    say(f"slurmd restarted with -b ({' '.join([argv[0], *args])}): it reports the reboot to slurmctld")
    return True


def boot_second_after(started: float) -> float:
    """The earliest time slurmd may start again so that Slurm sees a boot after the reboot request
    (made before `started`, when this restarter began). slurmctld takes a node's boot time as
    the registration's second minus its uptime, which slurmd -b reports as 1 s, and waits for a
    boot time not before the request's second: a slurmd registering within a second of the
    request leaves the node "still waiting for boot" until ResumeTimeout fails the job."""
    return math.floor(started) + 2


def main(argv: list[str]) -> int:
    not_before = boot_second_after(time.time())
    say = Reporter("reboot")
    slurmd_pid, *wait_for = (int(a) for a in argv)
    if not _wait_gone(wait_for, WAIT_SECONDS):
        say(f"the reboot program did not exit within {WAIT_SECONDS:g} s; not restarting slurmd", error=True)
        return 1
    if not alive(slurmd_pid):
        say(f"slurmd (pid {slurmd_pid}) is gone already; not starting another", error=True)
        return 1
    time.sleep(max(0.0, not_before - time.time()))
    ok = restart_with_systemd(say) if under_systemd(slurmd_pid) else restart_in_place(slurmd_pid, say)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
