"""What every benchmark module gets: the settings of this run (full or --quick), the throwaway
venvs, temp dirs for the servers' sockets and state, the pinning, the bookkeeping of every
process the suite starts (all stopped, by pid, when the run ends or is interrupted), and
`rounds()`: measure a repetition's contenders one after another, again if other users of the
machine took CPU meanwhile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from machine import Pinning, busy_seconds, cpu_seconds, own_cpu_seconds, wait_for_quiet

HERE = os.path.dirname(os.path.abspath(__file__))


class Settings:
    """Counts and durations. The full run keeps each figure to what converges (~20 min in all);
    --quick runs every code path in seconds, with figures that mean nothing."""

    def __init__(self, quick: bool, reps: int | None):
        self.quick = quick
        self.reps = reps or (1 if quick else 3)
        self.duration = 0.3 if quick else 3.0  # seconds of measured load per point
        self.warmup = 0.1 if quick else 0.5  # seconds of the same load before it
        self.clients = (1, 16, 64)
        self.changes = 20 if quick else 500  # fan-out: changes per repetition (p99: the 5th worst)
        self.kept_changes = 10 if quick else 100  # eventlog: durable changes timed per start
        self.growth_requests = 2_000 if quick else 100_000  # RSS growth figure
        self.kept_sizes = (1_000, 10_000) if quick else (10_000, 100_000, 1_000_000)
        self.oneshot_runs = 3 if quick else 30
        self.shell_runs = 2 if quick else 20


ROUND_TRIES = 3


class OthersMeter:
    """How many CPUs other users of the machine kept busy while it ran: the machine's busy time
    (/proc/stat) less what this run's processes used (this one, the children it has waited for,
    and every process it tracks). The load average cannot tell: it counts our own load too."""

    def __init__(self, bench: "Bench"):
        self.bench = bench
        self.t0 = time.monotonic()
        self.busy0, self.own0, self.procs0 = busy_seconds(), own_cpu_seconds(), self._procs()

    def _procs(self) -> dict[int, float]:
        out = {}
        for pid in list(self.bench._procs):
            try:
                out[pid] = cpu_seconds(pid)[0]
            except (OSError, ValueError):
                pass  # gone
        return out

    def read(self) -> float:
        seconds = max(1e-3, time.monotonic() - self.t0)
        busy, own, procs = busy_seconds(), own_cpu_seconds(), self._procs()
        ours = own - self.own0 + sum(cpu - self.procs0.get(pid, 0.0) for pid, cpu in procs.items())
        # A tracked process reaped meanwhile is in `own` with its whole life: take off what it had before.
        ours -= sum(cpu for pid, cpu in self.procs0.items() if pid not in procs)
        return max(0.0, round((busy - self.busy0 - ours) / seconds, 2))


class Bench:
    def __init__(self, root: str, tmp: str, venvs: dict[str, str], settings: Settings, pin: str,
                 quiet_below: float, quiet_wait: float):
        self.root = root
        self.tmp = tmp
        self.venvs = venvs
        self.settings = settings
        self.pinning = Pinning(pin)
        self.quiet_below = quiet_below
        self.quiet_wait = quiet_wait
        self._procs: dict[int, subprocess.Popen] = {}
        self._dirs = 0
        self.started = time.monotonic()

    # -- shortcuts ------------------------------------------------------------------------------

    @property
    def quick(self) -> bool:
        return self.settings.quick

    @property
    def reps(self) -> int:
        return self.settings.reps

    @property
    def duration(self) -> float:
        return self.settings.duration

    @property
    def warmup(self) -> float:
        return self.settings.warmup

    def bin(self, venv: str, name: str) -> str:
        return os.path.join(self.venvs[venv], "bin", name)

    def tmpdir(self, name: str) -> str:
        """A fresh short directory (ipc socket paths must stay under 108 bytes)."""
        self._dirs += 1
        path = os.path.join(self.tmp, f"{self._dirs:02d}{name}")
        os.makedirs(path, mode=0o700)
        return path

    def say(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}] {message}", flush=True)

    # -- measuring under a shared machine's conditions -----------------------------------------

    def meter(self) -> OthersMeter:
        return OthersMeter(self)

    def rounds(self, label: str, steps: list[tuple[str, object]]) -> dict[str, dict]:
        """Run `steps` ([(name, function returning a result dict)]) one after another: one round
        of a repetition, whose results are compared with each other. Each result gets
        `others_cpus` (CPUs other users kept busy meanwhile, unless the step measured it more
        closely itself). If any step saw more than `quiet_below`, wait for a quieter moment and
        measure the whole round again, up to ROUND_TRIES times; the calmest round is kept, with
        `tries` saying how many it took."""
        best = None
        for attempt in range(1, ROUND_TRIES + 1):
            results = {}
            for name, step in steps:
                meter = self.meter()
                result = step()
                result.setdefault("others_cpus", meter.read())
                results[name] = result
            worst = max(r["others_cpus"] for r in results.values())
            if best is None or worst < best[0]:
                best = (worst, results)
            if worst < self.quiet_below:
                break
            if attempt < ROUND_TRIES:
                self.say(f"  {label}: other users took {worst} CPUs meanwhile; waiting, then measuring it again")
                wait_for_quiet(self.quiet_below, 0 if self.quick else 30, say=self.say)
        for result in best[1].values():
            result["tries"] = attempt
        return best[1]

    # -- processes ------------------------------------------------------------------------------

    def track(self, proc: subprocess.Popen) -> None:
        self._procs[proc.pid] = proc

    def untrack(self, proc: subprocess.Popen) -> None:
        self._procs.pop(proc.pid, None)

    def spawn_client(self, script: str, spec: dict) -> subprocess.Popen:
        """Start one of the suite's client processes (`script` in bench/, run with this Python,
        pinned as a client) and hand it its JSON spec line; it answers on stdout."""
        proc = subprocess.Popen(self.pinning.client([sys.executable, os.path.join(HERE, script)]),
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=HERE)
        self.track(proc)
        proc.stdin.write(json.dumps(spec) + "\n")
        proc.stdin.flush()
        return proc

    def reap(self, procs: list[subprocess.Popen], timeout: float) -> None:
        """Wait for processes that are finishing (killing any that take longer than `timeout`)."""
        for proc in procs:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.untrack(proc)

    def stop_all(self) -> None:
        """Stop every process this run started and is still running (SIGTERM, then SIGKILL)."""
        for proc in list(self._procs.values()):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for proc in list(self._procs.values()):
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs.clear()

    def python(self, venv: str) -> str:
        return sys.executable if venv == "csd" else os.path.join(self.venvs[venv], "bin", "python")
