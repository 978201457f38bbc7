"""cs_input_analyzer in local mode against a real csd: an input function made slow on purpose
(it sleeps per batch) starves the compiled program — csd reports suspected_input_bottleneck —
the analyzer measures it, says the current settings are input-bound and recommends enough
workers; the same run with the recommendation applied (num_workers_per_csx = nodes ×
tasks_per_node) is no longer flagged."""

import json
import os

import pytest

from tests.cstorch.helpers import weight_streaming
from tests.harness import Daemon
from tests.launch.helpers import launcher, report, user_env

SLOW = os.path.join(os.path.dirname(__file__), "slow_input.py")
BATCH = 64


@pytest.fixture(scope="module")
def csd():
    d = Daemon().start()
    weight_streaming(d)
    yield d
    d.cleanup()


def performance(model_dir: str) -> dict:
    with open(os.path.join(model_dir, "performance", "performance.json")) as f:
        return json.load(f)


@pytest.mark.alone  # the estimate is this CPU's speed: beside other tests it measures them
def test_the_recommendation_applied_removes_the_input_bottleneck(csd, tmp_path):
    """The device here is this CPU: a program's estimate is its cost on it, by the executing
    thread's CPU time (csadmin/cstorch/core/estimate.py: the same whatever else the machine runs), and
    csd flags a run fed below half of that. Each training run compiles its program afresh (a
    compile_dir of its own), so csd judges it against its own program's estimate. The input is
    slow by sleeping (its rate does not depend on the load, only bounded by its delay), and one
    worker feeds an eighth of the first compile's estimate: starved whatever the load. The fed
    run's steps need the CPU (docs/cstorch.md, cs_input_analyzer): make test runs this alone."""
    env = user_env(csd, CS_CONNECT=csd.connection_file)
    cwd = str(tmp_path)
    runs_dir = tmp_path / "runs"  # the training runs' compile reports go there, not over the first
    runs_dir.mkdir()

    done = launcher("csrun_cpu", "--local", "python", SLOW, "--compile-dir", str(tmp_path / "compile"),
                    "--model-dir", str(tmp_path / "c"), "--mode", "compile_only", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    est = float(report(cwd)["est_samples_per_sec"])
    delay = ["--delay", f"{8 * BATCH / est:.6f}"]  # one worker: est / 8 samples/s at most

    def train(workers: int, steps: int, model: str) -> dict:
        done = launcher("csrun_cpu", "--local", "python", SLOW, *delay,
                        "--compile-dir", str(tmp_path / f"compile-{model}"),
                        "--model-dir", str(tmp_path / model), "--num-steps", str(steps), "--workers", str(workers),
                        "--mode", "train", env=env, cwd=str(runs_dir))
        assert done.returncode == 0, done.stderr
        assert "compile cached" not in done.stderr  # its own program, its own estimate
        return performance(str(tmp_path / model))

    starved = train(1, 16, "starved")
    assert starved["suspected_input_bottleneck"] is True, starved
    assert starved["samples_per_sec"] <= est / 8 * 1.05, (starved, est)  # the sleep bounds it

    done = launcher("cs_input_analyzer", "--local", "--seconds", "1", "python", SLOW, *delay, "--model-dir",
                    str(tmp_path / "a"), env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "input_analysis_report.txt") as f:
        text = f.read()
    assert text == done.stdout
    values = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line and not line.startswith("#"))
    per_worker = float(values["samples_per_sec_per_worker"].split()[0])
    assert 0 < per_worker <= est / 8 * 1.05, text
    assert values["input_bound"].startswith("yes (below half the estimate"), text
    needed = int(values["workers_needed"].split()[0])
    assert needed * per_worker >= est * 1.25 > (needed - 1) * per_worker, text  # enough, not more
    nodes, tasks, cpus = int(values["nodes"]), int(values["tasks_per_node"]), int(values["cpus_per_task"])
    assert cpus == 1 and tasks <= (os.cpu_count() or 1)
    assert nodes * tasks >= needed > (nodes - 1) * tasks, text  # the fewest nodes that hold them

    fed = train(nodes * tasks, 60, "fed")
    assert fed["suspected_input_bottleneck"] is False, fed
    assert fed["samples_per_sec"] > starved["samples_per_sec"] * 2, (fed, starved)


def test_analyzer_refusals(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CS_", "SLURM_"))}
    no_report = tmp_path / "empty"
    no_report.mkdir()
    cases = [
        (tmp_path, (), 2, "usage: cs_input_analyzer"),
        (tmp_path, ("--tasks-per-node", "0", SLOW), 2, "--tasks-per-node must be positive"),
        (tmp_path, ("nowhere.py",), 2, "no such script: nowhere.py"),
        (no_report, (SLOW,), 2, "cannot read compile_report.txt"),
        (tmp_path, ("--local", "--total-nodes", "2", SLOW), 2, "--total-nodes 2 needs a Slurm cluster"),
    ]
    (tmp_path / "compile_report.txt").write_text("est_samples_per_sec: 100.0\n")
    for cwd, args, code, says in cases:
        done = launcher("cs_input_analyzer", *args, env=env, cwd=str(cwd))
        assert done.returncode == code and says in done.stderr, (args, done.stderr)
    assert sorted(os.listdir(tmp_path)) == ["compile_report.txt", "empty"]  # no measurement dir left behind
