"""examples/cstorch/train_v2.py and eval_v2.py, scripts of the later releases' API run unmodified with
`python -m csadmin.cstorch` (they import cerebras.pytorch) against a real csd: the model learns,
checkpoint closures save on the checkpoint steps, the loss reaches TensorBoard through
cstorch.utils.tensorboard.SummaryWriter (read back with TensorBoard's EventAccumulator), the
validation in the same process is a second run, and the evaluation of a checkpoint equals plain
PyTorch with the system's numerics. With --backend CPU the same script learns with no system."""

import json
import os
import re
import subprocess
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tests.harness import ROOT

TRAIN = os.path.join(ROOT, "examples", "cstorch", "train_v2.py")
EVAL = os.path.join(ROOT, "examples", "cstorch", "eval_v2.py")


def run(env, *args):
    done = subprocess.run([sys.executable, "-m", "csadmin.cstorch", *args], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def scalars(log_dir, tag: str) -> list:
    events = EventAccumulator(str(log_dir))
    events.Reload()
    return [(s.step, s.value) for s in events.Scalars(tag)]


def test_train_v2_learns_checkpoints_summarizes_and_validates_as_a_second_run(ws_csd, tmp_path):
    out = tmp_path / "out"
    log = run(ws_csd.env(), TRAIN, "--out-dir", str(out), "--num-steps", "60", "--checkpoint-steps", "25")
    losses = scalars(out / "train", "loss")
    assert [step for step, _ in losses] == list(range(1, 61))
    assert sum(v for _, v in losses[-10:]) / 10 < sum(v for _, v in losses[:10]) / 10 / 2, losses
    assert sorted(f for f in os.listdir(out) if f.endswith(".mdl")) == [
        "checkpoint_25.mdl", "checkpoint_50.mdl", "checkpoint_60.mdl"]
    accuracy = float(re.search(r"Eval Accuracy=(\S+)", log).group(1))
    assert 0.6 < accuracy < 1.0, log
    assert scalars(out / "eval", "accuracy") == [(60, accuracy)]

    with ws_csd.client() as c:
        train, validate = reversed(c.runs_list()["runs"][:2])
    assert (train["mode"], train["status"], train["totalSamples"]) == ("train", "CLOSED", 60 * 32)
    assert (validate["mode"], validate["status"], validate["totalSamples"]) == ("eval", "CLOSED", 16 * 32)
    for number, record in (("000001", train), ("000002", validate)):
        perf = json.loads((out / "executors" / number / "performance.json").read_text())
        assert perf["total_samples"] == record["totalSamples"]

    checkpoint = str(out / "checkpoint_60.mdl")
    log = run(ws_csd.env(), EVAL, "--checkpoint", checkpoint, "--out-dir", str(tmp_path / "e"), "--check")
    ours = float(re.search(r"^Eval Accuracy: (\S+)$", log, re.M).group(1))
    plain = float(re.search(r"^Plain PyTorch Accuracy: (\S+)$", log, re.M).group(1))
    assert ours == plain == accuracy, log


def test_train_v2_on_the_cpu_backend_learns_without_a_system(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CS_CONNECT", "CS_KEY")}
    env["PYTHONPATH"] = ROOT
    out = tmp_path / "cpu"
    log = run(env, TRAIN, "--out-dir", str(out), "--backend", "CPU", "--num-steps", "40", "--checkpoint-steps", "20")
    assert "cstorch: backend CPU: the steps run eagerly with PyTorch on this CPU; no system" in log
    losses = scalars(out / "train", "loss")
    assert sum(v for _, v in losses[-10:]) < sum(v for _, v in losses[:10]) / 2, losses
    assert sorted(f for f in os.listdir(out) if f.endswith(".mdl")) == ["checkpoint_20.mdl", "checkpoint_40.mdl"]
    log = run(env, EVAL, "--checkpoint", str(out / "checkpoint_40.mdl"), "--out-dir", str(tmp_path / "e"),
              "--backend", "CPU", "--check")
    ours = float(re.search(r"^Eval Accuracy: (\S+)$", log, re.M).group(1))
    assert ours == float(re.search(r"^Plain PyTorch Accuracy: (\S+)$", log, re.M).group(1)) and ours > 0.6
