"""examples/cstorch's scripts written the way R1.8 users write them (runner_train.py, runner_eval.py,
custom_optimizer.py), run against a real csd both ways: `python -m csadmin.cstorch SCRIPT` (the
script imports cerebras_pytorch.experimental and cerebras_appliance) and `python SCRIPT` (it
imports csadmin.cstorch). Each exits 0, its loss falls, and csd shows one run of the right mode,
programmed once, with the samples it ran; TensorBoard reads back the summaries at their steps."""

import os
import re
import subprocess
import sys

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import csadmin.cstorch as cstorch
from tests.harness import ROOT

EXAMPLES = os.path.join(ROOT, "examples", "cstorch")
BATCH = 32


def run(ws_csd, script, *args, alias):
    command = [sys.executable, *(["-m", "csadmin.cstorch"] if alias else []), os.path.join(EXAMPLES, script), *args]
    done = subprocess.run(command, env=ws_csd.env(), cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def newest_run(ws_csd) -> dict:
    with ws_csd.client() as c:
        record = c.runs_list()["runs"][0]
        events = [e["type"] for e in c.events_show(max_count=2000) if e["details"].get("runId") == record["runId"]]
    assert events.count("EventProgrammingStarted") == 1, events  # programmed once
    return record


def scalars(log_dir) -> dict:
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


@pytest.mark.parametrize("alias", [True, False], ids=["cerebras_pytorch", "csadmin.cstorch"])
def test_runner_style_training_resumes_where_it_stopped_and_evaluates(ws_csd, tmp_path, alias):
    straight, split = tmp_path / "straight", tmp_path / "split"
    _, log = run(ws_csd, "runner_train.py", "--model-dir", str(straight), "--max-steps", "40", alias=alias)
    assert "| Train: WSE_WS Step=10, Loss=" in log and "1024 samples, batch size 32" in log
    assert log.count("change nothing here") == 1  # the appliance client's settings, said once
    record = newest_run(ws_csd)
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "train", 40 * BATCH)
    board = scalars(straight / "train")
    assert sorted(board) == ["loss", "lr.0", "params_norm"]
    assert sorted(board["loss"]) == list(range(1, 41)) == sorted(board["params_norm"])
    assert max(board["loss"][s] for s in range(31, 41)) < min(board["loss"][s] for s in range(1, 6))  # it learns
    assert sorted(f for f in os.listdir(straight) if f.endswith(".mdl")) == ["checkpoint_20.mdl", "checkpoint_40.mdl"]

    # the same run stopped at step 20, then resumed from its checkpoint (initial_step=20), the
    # other way round: it continues the step count and the data, to the same losses and weights
    run(ws_csd, "runner_train.py", "--model-dir", str(split), "--max-steps", "20", alias=not alias)
    _, log = run(ws_csd, "runner_train.py", "--model-dir", str(split), "--max-steps", "40",
                 "--checkpoint", str(split / "checkpoint_20.mdl"), alias=not alias)
    assert "Resuming from" in log and "| Train: WSE_WS Step=30," in log
    assert newest_run(ws_csd)["totalSamples"] == 20 * BATCH
    resumed = scalars(split / "train")["loss"]
    assert sorted(resumed) == list(range(1, 41))  # both runs' steps, numbered globally
    assert [resumed[s] for s in range(21, 41)] == [board["loss"][s] for s in range(21, 41)]
    a, b = cstorch.load(str(straight / "checkpoint_40.mdl")), cstorch.load(str(split / "checkpoint_40.mdl"))
    assert b["global_step"] == 40 and all(torch.equal(t, b["model"][k]) for k, t in a["model"].items())

    out, _ = run(ws_csd, "runner_eval.py", "--model-dir", str(tmp_path / "eval"),
                 "--checkpoint", str(straight / "checkpoint_40.mdl"), "--check", alias=alias)
    ours = float(re.search(r"^Eval Accuracy: (\S+)$", out, re.M).group(1))
    plain = float(re.search(r"^Plain PyTorch Accuracy: (\S+)$", out, re.M).group(1))
    assert ours == plain and 0.5 < ours < 1.0, out
    assert f"Metric: eval/accuracy = {ours}" in out and "Metric: eval/perplexity = " in out
    record = newest_run(ws_csd)  # no compiled_model.eval() in the script: the step says eval
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "eval", 16 * BATCH)
    board = scalars(tmp_path / "eval" / "eval")
    assert board["eval/accuracy"] == {40: pytest.approx(ours)} and sorted(board) == [
        "eval/accuracy", "eval/loss", "eval/perplexity"]


@pytest.mark.parametrize("alias", [True, False], ids=["cerebras_pytorch", "csadmin.cstorch"])
def test_a_custom_optimizer_with_its_own_arguments_trains_as_plain_pytorch(ws_csd, tmp_path, alias):
    out, _ = run(ws_csd, "custom_optimizer.py", "--model-dir", str(tmp_path), "--steps", "30", "--check", alias=alias)
    losses = [float(x) for x in re.findall(r"^step \d+ loss (\S+)$", out, re.M)]
    assert len(losses) == 4 and losses[-1] < losses[0] / 2, out
    # The step's half-precision products accumulate in float32 here, as the system's do (the
    # numerics contract, docs/cstorch.md); eager CPU float16 kernels round differently, so after 30
    # steps the weights agree within a float16 epsilon, not bit for bit.
    apart = float(re.search(r"^plain PyTorch's weights differ by at most (\S+)$", out, re.M).group(1))
    assert apart < 2 ** -10, out
    record = newest_run(ws_csd)
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "train", 30 * BATCH)
    saved = cstorch.load(str(tmp_path / "checkpoint_30.mdl"))["optimizer"]
    assert sorted(saved["state"][0]) == ["anchor", "momentum_buffer"]
    assert saved["param_groups"][0]["anchor_strength"] == 0.01 and saved["param_groups"][0]["max_update"] == 0.02
