"""`cs fleet show` over 16 csd against one `cs system show`, in the same run (issue 22: ≤ 1.5×),
and with one of the 16 unreachable (frozen with SIGSTOP: its socket accepts, nothing answers):
≤ its deadline + 1.5× one show.

    python bench/fleet.py [PAIRS]        # by hand; figures go in bench/RESULTS.md

How: 16 real csd (tests/harness.py Daemon, each with its own keys and serial) and an inventory
naming them; the two `cs` commands run as whole processes (spawn to exit), in pairs, in a random
order within each pair and with a random pause between pairs (a fixed rhythm can fall into step
with a periodic neighbour on a shared machine); medians and the ratio of the medians. Both
commands run from this checkout with the same interpreter and bytecode caches, compiled first.
"""

from __future__ import annotations

import compileall
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from tests.harness import Daemon  # noqa: E402

SYSTEMS = 16
DEADLINE = 1.0  # --deadline for the run with one system frozen


def wall_ms(argv: list[str], env: dict, expect: int) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    ms = (time.perf_counter() - t0) * 1000
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(argv[2:])} exited {done.returncode}, not {expect}: {done.stderr}")
    return ms


def pairs(commands: dict[str, tuple[list[str], int]], env: dict, n: int) -> dict[str, list[float]]:
    times = {name: [] for name in commands}
    for argv, expect in commands.values():
        wall_ms(argv, env, expect)  # warm: page cache, bytecode
    names = list(commands)
    for _ in range(n):
        random.shuffle(names)
        for name in names:
            argv, expect = commands[name]
            times[name].append(wall_ms(argv, env, expect))
        time.sleep(random.uniform(0, 0.05))
    return times


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    env = {k: v for k, v in os.environ.items() if not k.startswith("CS_") and k != "PYTHONDONTWRITEBYTECODE"}
    compileall.compile_dir(os.path.join(ROOT, "csadmin"), quiet=1)
    daemons = [Daemon(log_level="info", extra_args=["--serial", f"CS2-{i:04d}"]) for i in range(SYSTEMS)]
    workdir = tempfile.mkdtemp(prefix="fleet-bench-")
    inventory = os.path.join(workdir, "systems.toml")
    try:
        for d in daemons:
            d.start()
        with open(inventory, "w") as f:
            for i, d in enumerate(daemons):
                f.write(f'[systems.cs{i:02d}]\nconnect = "{d.connection_file}"\nkey = "{d.admin_key}"\n\n')
        env.update(CS_INVENTORY=inventory, PYTHONPATH=ROOT)
        cs = [sys.executable, "-m", "csadmin"]
        one = cs + ["--connect", daemons[0].connection_file, "--key", daemons[0].admin_key, "system", "show"]
        load = os.getloadavg()[0]
        all_up = pairs({"fleet show (16)": (cs + ["fleet", "show"], 0), "system show (1)": (one, 0),
                        # what the fleet command costs by itself (the inventory, threads), for the
                        # split between a fixed cost and a cost per system
                        "fleet show (1)": (cs + ["fleet", "show", "--systems", "cs00"], 0)}, env, n)
        os.kill(daemons[-1].proc.pid, signal.SIGSTOP)
        try:
            frozen = pairs({"fleet show (16, 1 frozen)": (cs + ["fleet", "show", "--deadline", str(DEADLINE)], 7),
                            "system show (1)": (one, 0)}, env, max(5, n // 2))
        finally:
            os.kill(daemons[-1].proc.pid, signal.SIGCONT)
        load_after = os.getloadavg()[0]
    finally:
        for d in daemons:
            d.cleanup()
    fleet, single = statistics.median(all_up["fleet show (16)"]), statistics.median(all_up["system show (1)"])
    slow, single2 = statistics.median(frozen["fleet show (16, 1 frozen)"]), statistics.median(frozen["system show (1)"])
    bound = DEADLINE * 1000 + 1.5 * single2
    fleet1 = statistics.median(all_up["fleet show (1)"])
    print(f"load average {load:.2f} before, {load_after:.2f} after; {os.cpu_count()} CPUs; {n} pairs")
    print("| figure | median ms (min–max) | against | target | verdict |")
    print("|---|---|---|---|---|")
    print(f"| `cs fleet show`, 16 csd | {fleet:.0f} ({min(all_up['fleet show (16)']):.0f}–"
          f"{max(all_up['fleet show (16)']):.0f}) | one `cs system show` {single:.0f} "
          f"({min(all_up['system show (1)']):.0f}–{max(all_up['system show (1)']):.0f}): **{fleet / single:.2f}×** "
          f"| ≤ 1.5× | {'met' if fleet / single <= 1.5 else 'NOT met'} |")
    print(f"| `cs fleet show --systems cs00` (1 of the 16) | {fleet1:.0f} | one `cs system show` {single:.0f}: "
          f"{fleet1 / single:.2f}× | (diagnostic: the fixed cost; 16 vs 1 costs "
          f"{(fleet - fleet1) / (SYSTEMS - 1):.1f} ms per further system) | |")
    print(f"| `cs fleet show --deadline {DEADLINE:g}`, 16 csd, 1 frozen | {slow:.0f} "
          f"({min(frozen['fleet show (16, 1 frozen)']):.0f}–{max(frozen['fleet show (16, 1 frozen)']):.0f}) "
          f"| deadline + 1.5× one show ({single2:.0f}) = {bound:.0f} | ≤ {bound:.0f} | "
          f"{'met' if slow <= bound else 'NOT met'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
