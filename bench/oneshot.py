"""One-shot `cs system show` wall time against `python -c "import zmq"` (docs/design.md, Performance targets: ≤ 1.4×).

How: csd runs from the installed wheel (compiled: PYTHONDONTWRITEBYTECODE=1 is set on these
machines, so a source checkout would recompile on every start); `cs` finds it through its
connection file and an admin key, with CURVE as deployed. The two commands run in pairs, in a
random order within each pair and with a random pause between pairs (a fixed rhythm can fall
into step with a periodic load on a shared machine and always hit the same command),
`oneshot_runs` pairs, as whole processes (spawn to exit), measured again if other users took
CPU meanwhile (suite.rounds); the table gives the medians and the ratio of the medians.

`python bench/oneshot.py` still works: it runs this figure through run.py.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time

NAME = "oneshot"
HERE = os.path.dirname(os.path.abspath(__file__))


def wall_ms(argv: list[str], env: dict, cwd: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - t0) * 1000


def run(bench) -> tuple[list[dict], dict]:
    from contenders import Csd
    from machine import loadavg
    from stats import row, summary, target

    csd = Csd(bench)
    try:
        csd.start()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CS_")}
        env.update(CS_CONNECT=csd.connection_file, CS_KEY=csd.key_files["admin"])
        commands = {"cs system show": bench.pinning.client([bench.bin("csd", "cs"), "system", "show"]),
                    "python -c 'import zmq'": bench.pinning.client([sys.executable, "-c", "import zmq"])}
        # `python -c` imports from its working directory first: an empty one, as from a quiet
        # home dir (a big or busy one, such as /tmp on a shared machine, slows every import).
        cwd = bench.tmpdir("oneshot-cwd")
        for argv in commands.values():
            wall_ms(argv, env, cwd)  # page cache warm for both

        def pairs() -> dict:
            times = {name: [] for name in commands}
            load1 = loadavg()[0]
            names = list(commands)
            for _ in range(bench.settings.oneshot_runs):
                random.shuffle(names)  # neither always goes first,
                for name in names:
                    times[name].append(wall_ms(commands[name], env, cwd))
                time.sleep(random.uniform(0, 0.05))  # nor keeps step with a periodic neighbour
            return {"ms": times, "load1": load1}

        result = bench.rounds("one-shot", [("pairs", pairs)])["pairs"]
    finally:
        csd.stop()
    times = result["ms"]
    cs, zmq_only = times["cs system show"], times["python -c 'import zmq'"]
    ratio = statistics.median(cs) / statistics.median(zmq_only)
    bench.say(f"  cs system show {statistics.median(cs):.1f} ms, python -c 'import zmq' "
              f"{statistics.median(zmq_only):.1f} ms: {ratio:.2f}×")
    return [row("oneshot", "one-shot `cs system show` wall time", summary(cs, "ms"), summary(zmq_only, "ms"),
                "`python -c \"import zmq\"`", {**summary([ratio]), "unit": ""}, target("<=", 1.4, "≤ 1.4×"),
                load=[result["load1"]], busy=[result["others_cpus"]],
                note=f"{len(cs)} runs each, in random order; ratio of the medians")], result


if __name__ == "__main__":
    sys.exit(subprocess.call([sys.executable, os.path.join(HERE, "run.py"), "--only", "oneshot", *sys.argv[1:]]))
