"""The other NLP models of ModelZoo R1.8's PyTorch tree (gpt3, gptj, bert, t5, transformer), unmodified,
train and evaluate against a real csd with their cstorch flow, as tests/zoo/test_modelzoo_r18.py runs
gpt2: `python -m csadmin.cstorch run.py CSX weight_streaming --params … --mode train|eval`, from the
model's folder, with the weight streaming config each ships shrunk in size only and small synthetic
data in its data processor's layout (tests/zoo/r18_models.py says which config and layout).

For every model: train (4 steps, one run on csd programmed once, 16 samples, CLOSED; checkpoints,
TensorBoard, params_train.yaml and performance.json in model_dir), then eval over its last checkpoint
(2 steps, 8 samples). validate_only and compile_only run for bert and t5 only, the two model families
gpt2's test does not already cover (gpt3 and gptj are gpt2's model; transformer is T5's), to keep CI
short. What the system refuses: Variable Tensor Shape (transformer's config as shipped) in weight
streaming, with its message, before any run opens. layers_api_demo is not run: its model does not build
in the release itself (r18_models.py).

One extraction of the release and one csd serve the whole module. Skips, saying why, where the
archive or the release's import-time requirements are absent. About 2-3 minutes on two cores.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import yaml

from tests.cstorch.helpers import ws_csd  # noqa: F401  (the fixture)
from tests.zoo.r18 import Zoo, extract, programmings, run_py, runs, scalars
from tests.zoo.r18_models import BATCH, MODELS

STEPS = 4


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> dict[str, Zoo]:
    """Every model of one fresh extraction, with its tiny params and data."""
    release, path = extract(tmp_path_factory)
    base = str(tmp_path_factory.mktemp("r18-data"))
    return {name: Zoo(model.folder(release), model.prepare(release, base), path) for name, model in MODELS.items()}


def performance(model_dir) -> dict:
    """The run's performance.json, where the R1.8 flow writes it."""
    with open(model_dir / "performance" / "performance.json") as f:
        return json.load(f)


def _log(done) -> str:
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.mark.parametrize("name", list(MODELS))
def test_trains_then_evaluates_its_checkpoint(ws_csd, zoo, tmp_path, name):
    import csadmin.cstorch as cstorch

    model_dir = tmp_path / "model_dir"
    log = _log(run_py(ws_csd, zoo[name], model_dir, "--mode", "train", "--max_steps", str(STEPS)))
    assert f"| Train: WSE_WS Step={STEPS}, Loss=" in log and "Training Completed Successfully!" in log
    assert f"Processed {STEPS * BATCH} sample(s)" in log  # ModelZoo's count: steps x batch
    record = runs(ws_csd)[0]
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "train", STEPS * BATCH)
    assert programmings(ws_csd, record["runId"]) == 1
    with open(zoo[name].params) as f:
        initial = yaml.safe_load(f)["runconfig"].get("save_initial_checkpoint", False)  # bert's says so
    assert sorted(f for f in os.listdir(model_dir) if f.endswith(".mdl")) == [
        *(["checkpoint_0.mdl"] if initial else []), "checkpoint_2.mdl", "checkpoint_4.mdl"]
    assert sorted(scalars(model_dir / "train")["loss"]) == [1, 2, 3, 4]
    with open(model_dir / "train" / "params_train.yaml") as f:
        assert yaml.safe_load(f)["run"]["run_id"] == record["runId"]
    assert performance(model_dir)["total_samples"] == STEPS * BATCH
    first, last = cstorch.load(str(model_dir / "checkpoint_2.mdl")), cstorch.load(str(model_dir / "checkpoint_4.mdl"))
    assert (first["global_step"], last["global_step"]) == (2, 4) and last["optimizer"]["state"]
    assert any(not np.array_equal(first["model"][k].numpy(), last["model"][k].numpy()) for k in last["model"])

    # eval over the last checkpoint: the DataLoader starts at its step, so max_steps 6 evaluates 2 batches
    log = _log(run_py(ws_csd, zoo[name], model_dir, "--mode", "eval", "--checkpoint_path",
                      str(model_dir / "checkpoint_4.mdl"), "--max_steps", str(STEPS + 2)))
    assert log.count(f"| Eval: WSE_WS Step={STEPS}, Loss=") == 2 and "Evaluation completed successfully!" in log
    record = runs(ws_csd)[0]
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "eval", 2 * BATCH)
    assert programmings(ws_csd, record["runId"]) == 1
    assert "loss" in scalars(model_dir / "eval")
    assert performance(model_dir)["total_samples"] == 2 * BATCH  # each run writes its own


@pytest.mark.parametrize("name", ["bert", "t5"])
def test_validate_only_and_compile_only_open_no_run(ws_csd, zoo, tmp_path, name):
    before = len(runs(ws_csd))
    log = _log(run_py(ws_csd, zoo[name], tmp_path / "v", "--mode", "train", "--validate_only"))
    assert "validate_only: step 'training_step' is valid for CS2-0001 (WEIGHT_STREAMING, mode train)" in log
    assert "Nothing was compiled, programmed or executed." in log
    assert not os.path.exists(tmp_path / "v" / "compile")

    log = _log(run_py(ws_csd, zoo[name], tmp_path / "c", "--mode", "train", "--compile_only"))
    assert "compile_only: step 'training_step' is valid for CS2-0001" in log
    assert "The fabric was not programmed; nothing executed." in log
    assert [d for d in os.listdir(tmp_path / "c" / "compile") if d.startswith("cs_")]
    assert len(runs(ws_csd)) == before


def test_variable_tensor_shape_is_refused_in_weight_streaming(ws_csd, zoo, tmp_path):
    # transformer_base.yaml as shipped (enable_vts: True), shrunk in size only
    with open(zoo["transformer"].params) as f:
        params = yaml.safe_load(f)
    params["model"]["enable_vts"] = True
    with open(tmp_path / "vts.yaml", "w") as f:
        yaml.safe_dump(params, f)
    before = len(runs(ws_csd))
    done = run_py(ws_csd, zoo["transformer"], tmp_path / "m", "--mode", "train", params=str(tmp_path / "vts.yaml"))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "run.py: INVALID_ARGUMENT: cerebras_pytorch.nn.StripPadding (Variable Tensor Shape, the model's `enable_vts`) "
        "runs in Layer Pipelined execution only; ModelZoo's cstorch flow compiles for weight streaming (backend "
        "WSE_WS), which does not take it. Set `enable_vts: False` in the params' model section.")
    assert len(runs(ws_csd)) == before
