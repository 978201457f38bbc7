"""csrun_cpu in local mode (no Slurm) against real csds: validate_only and compile_only leave
the system unprogrammed, the compile writes compile_report.txt where it ran, a later run on the
same system reuses the artifacts (cached), and another system refuses them with 000's rule."""

import json
import os

import pytest

from tests.cstorch.helpers import weight_streaming
from tests.harness import Daemon
from tests.launch.helpers import TRAIN, launcher, programming_events, report, runs, user_env


@pytest.fixture(scope="module")
def two_csds():
    a = Daemon(extra_args=["--serial", "CS2-LAUNCH-A"]).start()
    b = Daemon(extra_args=["--serial", "CS2-LAUNCH-B"]).start()
    for d in (a, b):
        weight_streaming(d)
    yield a, b
    for d in (a, b):
        d.cleanup()


def test_validate_compile_then_a_cached_run_and_another_system_refused(two_csds, tmp_path):
    a, b = two_csds
    env = user_env(a)
    model_dir, cwd = str(tmp_path / "model"), str(tmp_path)
    script = [TRAIN, "--model-dir", model_dir, "--num-steps", "12"]

    done = launcher("csrun_cpu", "--local", "--cs_ip", a.connection_file, "python", *script,
                    "--mode", "validate_only", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "validated" in done.stderr and not os.path.exists(tmp_path / "compile_report.txt")
    assert not os.path.exists(os.path.join(model_dir, "compile"))  # validate_only writes nothing

    done = launcher("csrun_cpu", "--local", "--cs_ip", a.connection_file, "python", *script,
                    "--mode=compile_only", env=env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    rep = report(cwd)
    assert rep["target_system"] == "CS2-LAUNCH-A" and rep["cached"] == "no" and rep["mode"] == "compile_only"
    assert float(rep["est_samples_per_sec"]) > 0 and rep["checksum"].startswith("sha256:")
    artifacts = rep["directory"]
    with open(os.path.join(artifacts, "program.json")) as f:
        assert json.load(f)["descriptor"]["fingerprint"] == rep["checksum"]
    # neither opened a run nor programmed the fabric
    assert runs(a) == [] and programming_events(a) == 0
    listing = sorted(os.listdir(artifacts))

    # the run on the same system: the compile is cached (est from the artifacts, nothing rewritten)
    run_env = dict(env, CS_CONNECT=a.connection_file)
    done = launcher("csrun_cpu", "--local", "python", *script, "--mode", "train", env=run_env, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "compile cached: reusing " + artifacts in done.stderr
    assert sorted(os.listdir(artifacts)) == listing
    rep2 = report(cwd)
    assert rep2["cached"] == "yes" and rep2["checksum"] == rep["checksum"]
    assert rep2["est_samples_per_sec"] == rep["est_samples_per_sec"]
    (record,) = runs(a)
    assert (record["status"], record["totalSamples"]) == ("CLOSED", 12 * 32)
    with open(os.path.join(model_dir, "performance", "performance.json")) as f:
        perf = json.load(f)
    assert perf["est_samples_per_sec"] == float(rep["est_samples_per_sec"])
    assert perf["compile_time"] == pytest.approx(float(rep2["compile_time"]), abs=1e-3)

    # the same artifacts on another system: refused before any run opens there
    done = launcher("csrun_cpu", "--local", "--cs_ip", b.connection_file, "python", *script, env=user_env(b), cwd=cwd)
    assert done.returncode == 3, done.stderr  # refused by a rule of the fabric (EXIT_STATE)
    assert "train.py: INCOMPATIBLE_PROGRAM: " in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert ("were compiled for system CS2-LAUNCH-A, not CS2-LAUNCH-B: when you compile your model on one CS "
            "system, you cannot run this compiled model on another") in done.stderr
    assert runs(b) == [] and programming_events(b) == 0


def test_bad_command_lines_are_usage_errors(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CS_", "SLURM_"))}
    cases = [
        ((), "usage: csrun_cpu"),
        (("--cs_ip",), "no python SCRIPT"),
        (("python",), "python needs a script"),
        (("python", "nowhere.py"), "no such script: nowhere.py"),
        (("python", TRAIN, "--mode", "fly"), "--mode 'fly' is not a mode"),
        (("--bogus", "python", TRAIN), "unknown option(s) --bogus"),
        (("--cs_ip", "no-such-system", "python", TRAIN), "--cs_ip 'no-such-system' is not a file, an endpoint"),
        (("--cs_ip", "cs2-b", "python", TRAIN), "cs2-a"),  # the inventory's NotFound names the closest
    ]
    inventory = tmp_path / "systems.toml"
    inventory.write_text('[systems.cs2-a]\nendpoint = "tcp://127.0.0.1:1"\n')
    for args, says in cases:
        done = launcher("csrun_cpu", *args, env=dict(env, CS_INVENTORY=str(inventory)), cwd=str(tmp_path))
        assert done.returncode in (2, 6), (args, done.stderr)
        assert says in done.stderr, (args, done.stderr)



def test_a_directory_it_cannot_write_is_said_before_anything_runs(tmp_path, monkeypatch, capsys):
    from csadmin.launch import cpu

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # (root may write anywhere: a directory that no longer exists refuses even root)
    assert cpu.main(["--local", "python", TRAIN, "--mode", "compile_only"]) == 2
    assert "cannot write in" in capsys.readouterr().err
