"""What the machine is doing: process CPU and RSS from /proc, the load average, how busy the
other users of this (shared) machine keep it, and the `taskset` pinning both sides get.

Stdlib only: run.py imports this before any throwaway venv exists.
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import subprocess
import time

TICKS = os.sysconf("SC_CLK_TCK")


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def _stat_ticks(path: str) -> int:
    """utime + stime of one /proc/.../stat, in clock ticks."""
    with open(path) as f:
        text = f.read()
    fields = text[text.rindex(")") + 2:].split()  # the command name may hold spaces
    return int(fields[11]) + int(fields[12])


def cpu_seconds(pid: int) -> tuple[float, float]:
    """(all threads, main thread) CPU seconds a process has used so far. The main thread is the
    one running Python in every server measured here; the rest are libzmq's I/O threads."""
    total = _stat_ticks(f"/proc/{pid}/stat")
    main = _stat_ticks(f"/proc/{pid}/task/{pid}/stat")
    return total / TICKS, main / TICKS


def rss_mb(pid: int) -> float:
    """Resident set size of a process, in MB (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _busy_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values[:8]) - idle, sum(values[:8])  # steal counts as busy: another VM had the CPU


def busy_seconds() -> float:
    """CPU-seconds the whole machine has been busy (all CPUs, everyone's processes)."""
    return _busy_jiffies()[0] / TICKS


def own_cpu_seconds() -> float:
    """CPU-seconds of this process and of its children that have been waited for."""
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


def others_busy(seconds: float = 1.0) -> float:
    """How many CPUs the machine kept busy over `seconds` while the suite itself was idle:
    the load other users put on it. (The load average lags by a minute and counts our own
    load generators too, so it cannot tell a quiet moment.)"""
    busy0, total0 = _busy_jiffies()
    time.sleep(seconds)
    busy1, total1 = _busy_jiffies()
    return round(os.cpu_count() * (busy1 - busy0) / max(1, total1 - total0), 2)


def wait_for_quiet(threshold: float, max_wait: float, say=print) -> dict:
    """Wait (up to `max_wait` s) until others keep fewer than `threshold` CPUs busy. Returns
    what was seen, so the results say under which conditions a figure was measured."""
    busy = others_busy()
    started = time.monotonic()
    while busy >= threshold and time.monotonic() - started < max_wait:
        say(f"  machine busy ({busy} CPUs used by others, load {loadavg()[0]}); waiting for a quieter moment")
        time.sleep(4)
        busy = others_busy()
    waited = round(time.monotonic() - started, 1)
    return {"others_busy_cpus": busy, "waited_s": waited, "quiet": busy < threshold, "loadavg": loadavg()}


def info() -> dict:
    """The machine a run was measured on."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    return {
        "hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(), "cpu_model": model,
        "mem_gb": round(mem_kb / 1024 / 1024, 1), "python": platform.python_version(),
    }


def git_commit(root: str) -> dict:
    """The commit measured, and whether the checkout had uncommitted changes."""
    def git(*args):
        return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "describe": git("log", "-1", "--format=%h %s"),
            "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}


class Pinning:
    """Which CPUs servers and load generators may run on (`taskset -c`), the same for every
    contender (both sides of a comparison must see the same conditions).
    Spec: "" (not pinned), "0" (everything on CPU 0), "0:1" (servers on 0, clients on 1)."""

    def __init__(self, spec: str = ""):
        self.spec = spec
        server, _, clients = spec.partition(":")
        self.server_cpus = server
        self.client_cpus = clients or server

    def server(self, argv: list[str]) -> list[str]:
        return ["taskset", "-c", self.server_cpus, *argv] if self.server_cpus else list(argv)

    def client(self, argv: list[str]) -> list[str]:
        return ["taskset", "-c", self.client_cpus, *argv] if self.client_cpus else list(argv)

    @contextlib.contextmanager
    def this_process_as_client(self):
        """Run the suite's own process on the clients' CPUs for a while (where it acts as a
        client itself, e.g. the fan-out figure's mutator)."""
        if not self.client_cpus:
            yield
            return
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, _cpu_list(self.client_cpus))
        try:
            yield
        finally:
            os.sched_setaffinity(0, before)

    def describe(self) -> str:
        if not self.spec:
            return "not pinned"
        return f"servers on CPU {self.server_cpus}, load generators on CPU {self.client_cpus} (taskset)"


def _cpu_list(text: str) -> set[int]:
    """taskset's list syntax: "0", "0,1", "0-3"."""
    cpus = set()
    for part in text.split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus
