"""examples/cstorch: the document's full training and evaluation examples, run as scripts
against a real csd: the model learns, checkpoints land on the checkpoint steps, a resumed run
reaches the same weights as an uninterrupted one, the evaluation's accuracy equals plain
PyTorch's with the same numerics (float16 autocast: the runtime computes every step in float16,
001), and csd shows one run per script, programmed once, with its samples."""

import os
import re
import subprocess
import sys

import torch

import csadmin.cstorch as cstorch
from tests.harness import ROOT

TRAIN = os.path.join(ROOT, "examples", "cstorch", "train.py")
EVAL = os.path.join(ROOT, "examples", "cstorch", "eval.py")


def run(ws_csd, *args, alias=True):
    command = [sys.executable, *(["-m", "csadmin.cstorch"] if alias else []), *args]
    done = subprocess.run(command, env=ws_csd.env(), cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout


def newest_run(ws_csd) -> dict:
    with ws_csd.client() as c:
        return c.runs_list()["runs"][0]


def test_train_learns_in_float16_with_dynamic_loss_scaling(ws_csd, tmp_path):
    """The step computes in float16 (001); the document's GradScaler, as the example builds it
    with --loss-scale dynamic, scales the loss so small float16 gradients do not underflow."""
    out = run(ws_csd, TRAIN, "--model-dir", str(tmp_path), "--num-steps", "40", "--checkpoint-steps", "40",
              "--loss-scale", "dynamic")
    losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", out)]
    assert losses[-1] < losses[0] / 2, out
    log = "".join(open(os.path.join(root, f)).read() for root, _, fs in os.walk(tmp_path / "compile")
                  for f in fs if f == "compile.log")
    assert "mixed precision: float32 weights, float16 compute" in log


def test_train_learns_checkpoints_resumes_to_the_same_weights_and_eval_matches_plain_pytorch(ws_csd, tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    out = run(ws_csd, TRAIN, "--model-dir", a, "--num-steps", "40", "--checkpoint-steps", "20")
    losses = [float(x) for x in re.findall(r"loss (\d+\.\d+)", out)]
    assert losses[-1] < losses[0] / 2, out
    assert sorted(f for f in os.listdir(a) if f.endswith(".mdl")) == ["checkpoint_20.mdl", "checkpoint_40.mdl"]

    # csd: one run for the script, programmed once, with every sample it trained on
    record = newest_run(ws_csd)
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "train", 40 * 32)
    shown = ws_csd.cs("runs", "show", record["runId"])
    assert shown.returncode == 0 and "1280" in shown.stdout, shown.stdout
    events = ws_csd.cs("events", "show", "--max-count", "500")
    assert events.returncode == 0
    lines = [line for line in events.stdout.splitlines() if record["runId"] in line]
    assert sum("ProgrammingStarted" in line for line in lines) == 1, events.stdout

    # the same run stopped at step 20 and resumed from its checkpoint reaches the same weights
    run(ws_csd, TRAIN, "--model-dir", b, "--num-steps", "40", "--max-steps", "20", "--checkpoint-steps", "20",
        alias=False)
    out = run(ws_csd, TRAIN, "--model-dir", b, "--num-steps", "40", "--checkpoint-steps", "20",
              "--checkpoint", os.path.join(b, "checkpoint_20.mdl"))
    assert "resumed from" in out and "at step 20" in out
    straight = cstorch.load(os.path.join(a, "checkpoint_40.mdl"))
    resumed = cstorch.load(os.path.join(b, "checkpoint_40.mdl"))
    for name, tensor in straight["model"].items():
        assert torch.equal(tensor, resumed["model"][name]), name
    assert resumed["global_step"] == 40
    assert newest_run(ws_csd)["totalSamples"] == 20 * 32

    out = run(ws_csd, EVAL, "--model-dir", str(tmp_path / "e"), "--checkpoint", os.path.join(a, "checkpoint_40.mdl"),
              "--check")
    ours = float(re.search(r"^Eval Accuracy: (\S+)$", out, re.M).group(1))
    plain = float(re.search(r"^Plain PyTorch Accuracy: (\S+)$", out, re.M).group(1))
    assert ours == plain and 0.5 < ours < 1.0, out
    record = newest_run(ws_csd)
    assert (record["mode"], record["totalSamples"]) == ("eval", 16 * 32)


def test_train_with_input_workers_counts_each_workers_samples(ws_csd, tmp_path):
    out = run(ws_csd, TRAIN, "--model-dir", str(tmp_path / "w"), "--num-steps", "30", "--workers", "2")
    assert "performance:" in out
    record = newest_run(ws_csd)
    assert (record["status"], record["totalSamples"]) == ("CLOSED", 30 * 32)
    rows = {row["name"]: row["samples"] for row in record["workers"]}
    assert sorted(rows) == ["worker-0", "worker-1"] and sum(rows.values()) == 30 * 32
    assert os.path.isfile(tmp_path / "w" / "train" / "params_train.yaml")


def test_train_validate_only_and_compile_only_end_with_a_summary(ws_csd, tmp_path):
    before = newest_run(ws_csd)["runId"]
    out = run(ws_csd, TRAIN, "--model-dir", str(tmp_path / "v"), "--validate-only")
    assert "cstorch validate_only: step 'training_step' is valid for" in out and "performance:" not in out
    out = run(ws_csd, TRAIN, "--model-dir", str(tmp_path / "c"), "--compile-only")
    assert "cstorch compile_only: step 'training_step' is valid for" in out
    assert newest_run(ws_csd)["runId"] == before  # neither opened a run
