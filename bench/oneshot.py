"""One-shot `cs system show` wall time against `python -c "import zmq"` (DESIGN §6: ≤ 1.4×).

Run by hand: `python bench/oneshot.py [N]`. Builds a wheel, installs it in a throwaway venv
(PYTHONDONTWRITEBYTECODE=1 is set on these machines, so a source checkout would recompile on
every start), starts csd, then times both commands alternately, N runs each, same conditions.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(n: int = 30) -> None:
    tmp = tempfile.mkdtemp(prefix="cs-bench-")
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    subprocess.run([py, "-m", "pip", "install", "-q", ROOT], check=True)
    # Compile the installed packages once, as a distro or pip normally leaves them.
    subprocess.run([py, "-m", "compileall", "-q", os.path.join(venv, "lib")], check=True,
                   env=dict(os.environ, PYTHONDONTWRITEBYTECODE=""))
    endpoint = f"ipc://{tmp}/csd.sock"
    key = f"{tmp}/admin.key_secret"
    subprocess.run([os.path.join(venv, "bin", "csd"), "keys", "init", "--state-dir", f"{tmp}/state", "--out", key],
                   check=True, stdout=subprocess.DEVNULL)
    csd = subprocess.Popen([os.path.join(venv, "bin", "csd"), "--state-dir", f"{tmp}/state", "--endpoint", endpoint,
                            "--events-endpoint", f"ipc://{tmp}/ev.sock"], stdout=subprocess.DEVNULL)
    # CURVE as deployed: the connection file csd writes next to its socket, and an admin key.
    env = dict(os.environ, CS_CONNECT=f"{tmp}/csd.json", CS_KEY=key)
    cs = [os.path.join(venv, "bin", "cs"), "system", "show"]
    zmq_only = [py, "-c", "import zmq"]
    deadline = time.monotonic() + 20
    while subprocess.run(cs, env=env, capture_output=True).returncode != 0:
        assert time.monotonic() < deadline, "csd did not start"
        time.sleep(0.1)
    times = {"cs system show": [], "python -c 'import zmq'": []}
    try:
        for _ in range(n):
            for name, cmd in (("cs system show", cs), ("python -c 'import zmq'", zmq_only)):
                t0 = time.perf_counter()
                subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
                times[name].append((time.perf_counter() - t0) * 1000)
    finally:
        csd.terminate()
        csd.wait()
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:28s} median {v:6.1f} ms  (n={n}, min {min(times[k]):.1f}, max {max(times[k]):.1f})")
    ratio = med["cs system show"] / med["python -c 'import zmq'"]
    print(f"ratio: {ratio:.2f}x (target <= 1.4x)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
