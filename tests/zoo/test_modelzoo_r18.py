"""The vendor's ModelZoo R1.8, unmodified, trains against a real csd: gpt2's run.py with its cstorch
flow, run as its users run it, from the model's folder with the release's root on PYTHONPATH:

    python -m csadmin.cstorch run.py CSX weight_streaming --params params.yaml --mode train \\
        --model_dir DIR --compile_dir DIR/compile --max_steps 4

The release (../shared/modelzoo/modelzoo-1.8.0.tar.gz beside the checkout) is extracted to a temp
folder and never edited. The params are its params_gpt2_small_ws.yaml shrunk in size only
(layers, widths, vocabulary, sequence length, batch), its data folders pointed at small synthetic
HDF5 files in the layout its GptHDF5DataProcessor reads (create_hdf5_dataset.py's: `data`
[n, 3, msl] int32 of input_ids, attention_mask, labels, attribute n_examples), and its runconfig
given the two keys the cstorch flow reads (`experimental_api: True` chooses it;
`transfer_processes`, which only that flow indexes). Train, eval over the checkpoint train wrote,
validate_only and compile_only run, and what the system refuses is refused with its message.

Skips, saying why, where the archive is absent (a fresh clone without ../shared) or the release's
own import-time requirements (nltk, Keras-Preprocessing, jsonschema) are not installed. About
40-70 s on two cores (six ModelZoo processes, ~5 s of imports each).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import yaml

from tests.cstorch.helpers import weight_streaming, ws_csd  # noqa: F401  (ws_csd: the fixture)
from tests.zoo.r18 import Zoo, extract, programmings, run_py, runs, scalars
from tests.zoo.r18_models import BATCH, MSL, VOCAB, write_hdf5

GPT2 = "modelzoo/transformers/pytorch/gpt2"
# The size of the shipped config, shrunk; nothing else of model, optimizer or schedule changes.
MODEL = {"vocab_size": VOCAB, "hidden_size": 32, "max_position_embeddings": MSL, "num_hidden_layers": 2,
         "num_heads": 2, "filter_size": 64}


def _params(release: str, data: str) -> str:
    """params_gpt2_small_ws.yaml shrunk, on the synthetic data; the path of the copy."""
    with open(os.path.join(release, GPT2, "configs", "params_gpt2_small_ws.yaml")) as f:
        params = yaml.safe_load(f)
    for section, folder in (("train_input", "train"), ("eval_input", "val")):
        params[section].update(data_dir=os.path.join(data, folder), max_sequence_length=MSL, batch_size=BATCH)
    params["model"].update(MODEL)
    params["runconfig"].update(max_steps=4, checkpoint_steps=2, log_steps=1, experimental_api=True,
                               transfer_processes=None)
    path = os.path.join(data, "params_gpt2_tiny_ws.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(params, f, sort_keys=False)
    return path


@pytest.fixture(scope="module")
def zoo(tmp_path_factory) -> Zoo:
    """gpt2 of a fresh extraction, with the tiny params."""
    release, path = extract(tmp_path_factory)
    data = str(tmp_path_factory.mktemp("gpt2-data"))
    write_hdf5(os.path.join(data, "train"), 64, seed=0)  # 8 loader workers x 2 batches
    write_hdf5(os.path.join(data, "val"), 32, seed=1)
    return Zoo(os.path.join(release, GPT2), _params(release, data), path)


def test_gpt2_trains_then_evaluates_its_checkpoint(ws_csd, zoo, tmp_path):
    import csadmin.cstorch as cstorch

    model_dir = tmp_path / "model_dir"
    done = run_py(ws_csd, zoo, model_dir, "--mode", "train", "--max_steps", "4")
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    assert "| Train: WSE_WS Step=4, Loss=" in log and "Training Completed Successfully!" in log
    assert "Processed 16 sample(s)" in log  # ModelZoo's count: steps x batch
    record = runs(ws_csd)[0]
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "train", 4 * BATCH)
    assert programmings(ws_csd, record["runId"]) == 1
    # where the R1.8 flow writes: checkpoint_<step>.mdl in model_dir (the initial one, then every
    # checkpoint_steps), its TensorBoard events in model_dir/train, the run's record beside them
    assert sorted(f for f in os.listdir(model_dir) if f.endswith(".mdl")) == [
        "checkpoint_0.mdl", "checkpoint_2.mdl", "checkpoint_4.mdl"]
    board = scalars(model_dir / "train")
    assert sorted(board["loss"]) == [1, 2, 3, 4] and sorted(board["lr.0"]) == [1, 2, 3, 4]
    with open(model_dir / "train" / "params_train.yaml") as f:
        assert yaml.safe_load(f)["run"]["run_id"] == record["runId"]
    first, last = cstorch.load(str(model_dir / "checkpoint_0.mdl")), cstorch.load(str(model_dir / "checkpoint_4.mdl"))
    assert (first["global_step"], last["global_step"]) == (0, 4) and last["optimizer"]["state"]
    assert any(not np.array_equal(first["model"][k].numpy(), last["model"][k].numpy()) for k in last["model"])

    # eval over that checkpoint: ModelZoo starts its DataLoader at the checkpoint's step, so
    # --max_steps 6 evaluates 2 batches
    done = run_py(ws_csd, zoo, model_dir, "--mode", "eval", "--checkpoint_path",
                  str(model_dir / "checkpoint_4.mdl"), "--max_steps", "6")
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    assert log.count("| Eval: WSE_WS Step=4, Loss=") == 2 and "Evaluation completed successfully!" in log
    record = runs(ws_csd)[0]
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "eval", 2 * BATCH)
    assert programmings(ws_csd, record["runId"]) == 1
    assert "loss" in scalars(model_dir / "eval")

    # eval_all: ModelZoo runs `sys.executable run.py --mode=eval --checkpoint_path=...` once per
    # checkpoint, oldest first; each of those processes imports cerebras_pytorch as this one does
    done = run_py(ws_csd, zoo, model_dir, "--mode", "eval_all", "--max_steps", "6")
    assert done.returncode == 0, done.stderr[-3000:]
    assert (done.stdout + done.stderr).count("Evaluation completed successfully!") == 3
    evals = runs(ws_csd)[:3]  # newest first: checkpoint_4's 2 batches, checkpoint_2's 4, checkpoint_0's 6
    assert [(r["status"], r["mode"], r["totalSamples"]) for r in evals] == [
        ("CLOSED", "eval", n * BATCH) for n in (2, 4, 6)]
    assert all(programmings(ws_csd, r["runId"]) == 1 for r in evals)


def test_validate_only_and_compile_only_open_no_run(ws_csd, zoo, tmp_path):
    before = len(runs(ws_csd))
    done = run_py(ws_csd, zoo, tmp_path / "v", "--mode", "train", "--validate_only")
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    assert "validate_only: step 'training_step' is valid for CS2-0001 (WEIGHT_STREAMING, mode train)" in log
    assert "Nothing was compiled, programmed or executed." in log
    assert not os.path.exists(tmp_path / "v" / "compile")

    done = run_py(ws_csd, zoo, tmp_path / "c", "--mode", "train", "--compile_only")
    assert done.returncode == 0, done.stderr[-3000:]
    log = done.stdout + done.stderr
    assert "compile_only: step 'training_step' is valid for CS2-0001" in log
    assert "The fabric was not programmed; nothing executed." in log
    assert [d for d in os.listdir(tmp_path / "c" / "compile") if d.startswith("cs_")]  # the compile's artifacts
    assert len(runs(ws_csd)) == before


def test_what_the_system_refuses_is_refused_with_its_message(ws_csd, zoo, tmp_path):
    # eval at the checkpoint's own step: the DataLoader has no step left to run
    train = run_py(ws_csd, zoo, tmp_path / "m", "--mode", "train", "--max_steps", "2")
    assert train.returncode == 0, train.stderr[-3000:]
    done = run_py(ws_csd, zoo, tmp_path / "m", "--mode", "eval", "--checkpoint_path",
                  str(tmp_path / "m" / "checkpoint_2.mdl"), "--max_steps", "2")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "run.py: INVALID_ARGUMENT: DataLoader: the run resumes at step 2, which already reaches max_steps 2: "
        "no step is left to run. Raise max_steps, or resume from an earlier checkpoint.")

    # without experimental_api, ModelZoo takes R1.8's older runner, which is not built here
    with open(zoo.params) as f:
        params = yaml.safe_load(f)
    del params["runconfig"]["experimental_api"]
    with open(tmp_path / "older.yaml", "w") as f:
        yaml.safe_dump(params, f)
    done = run_py(ws_csd, zoo, tmp_path / "o", "--mode", "train", params=str(tmp_path / "older.yaml"))
    assert done.returncode == 3
    assert done.stderr.splitlines()[-1] == (
        "run.py: INVALID_STATE: cerebras_pytorch.initialize belongs to R1.8's PyTorchBaseRunner flow, which is not "
        "built here. Run ModelZoo's cstorch flow: set `experimental_api: True` in the params' runconfig.")

    # a system in pipelined mode refuses the weight streaming compile
    with ws_csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=20)
        c.execmode_setup("PIPELINED")
        c.system_activate()
        c.wait_for(state="ACTIVE", execmode="PIPELINED", timeout=20)
    try:
        before = len(runs(ws_csd))
        done = run_py(ws_csd, zoo, tmp_path / "p", "--mode", "train")
        assert done.returncode == 3
        assert done.stderr.splitlines()[-1] == (
            "run.py: INCOMPATIBLE_PROGRAM: backend='WSE_WS' compiles for WEIGHT_STREAMING, but the system runs in "
            "PIPELINED. Use backend='wse_pl', or ask an admin to switch the execution mode (`config execmode "
            "setup`, then `system activate`).")
        assert len(runs(ws_csd)) == before
    finally:
        weight_streaming(ws_csd)
