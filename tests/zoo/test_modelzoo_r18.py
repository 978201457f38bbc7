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

import importlib.util
import os
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import yaml

from tests.cstorch.helpers import weight_streaming, ws_csd  # noqa: F401  (ws_csd: the fixture)
from tests.harness import ROOT

ARCHIVE = os.path.join(os.path.dirname(ROOT), "shared", "modelzoo", "modelzoo-1.8.0.tar.gz")
# What the release imports on every path (its requirements_cb_pt.txt and requirements_cb.txt),
# by module name and PyPI name.
REQUIRES = {"nltk": "nltk", "keras_preprocessing": "Keras-Preprocessing", "jsonschema": "jsonschema"}
GPT2 = "modelzoo/transformers/pytorch/gpt2"
BATCH, MSL, VOCAB = 4, 16, 64
# The size of the shipped config, shrunk; nothing else of model, optimizer or schedule changes.
MODEL = {"vocab_size": VOCAB, "hidden_size": 32, "max_position_embeddings": MSL, "num_hidden_layers": 2,
         "num_heads": 2, "filter_size": 64}


def _write_hdf5(folder, examples: int, seed: int) -> None:
    """`examples` random sequences in create_hdf5_dataset.py's layout (one file)."""
    import h5py

    os.makedirs(folder)
    ids = np.random.default_rng(seed).integers(0, VOCAB, size=(examples, MSL + 1))
    data = np.stack([ids[:, :-1], np.ones((examples, MSL), np.int64), ids[:, 1:]], axis=1).astype("i4")
    with h5py.File(os.path.join(folder, "data-0.h5"), "w") as f:
        f.attrs["n_examples"] = examples
        f.create_dataset("data", data=data, dtype="i4", chunks=(1, 3, MSL), compression="gzip")


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


def _torchvision_path(base) -> list[str]:
    """Where the scripts find `torchvision`. The release's wheel branch imports torchvision and
    torchvision.io.image only to silence their warnings at import (gpt2 uses neither). PyPI's
    torchvision cannot load beside the project's CPU build of torch (its C++ ops are built for
    CUDA torch: `operator torchvision::nms does not exist`), so where the real one does not import
    the scripts get a package of that name that says, on any use, that it is not torchvision."""
    probe = subprocess.run([sys.executable, "-c", "import torchvision.io.image"], capture_output=True)
    if probe.returncode == 0:
        return []
    folder = os.path.join(base, "no-torchvision")
    os.makedirs(os.path.join(folder, "torchvision", "io"))
    body = ('"""Not torchvision: the test stand-in for an import ModelZoo 1.8 makes and gpt2 never uses."""\n\n'
            "def __getattr__(name):\n"
            "    raise ImportError(f'torchvision.{name}: torchvision is not installed (tests/zoo stand-in)')\n")
    for module in ("__init__.py", "io/__init__.py", "io/image.py"):
        with open(os.path.join(folder, "torchvision", module), "w") as f:
            f.write(body)
    return [folder]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """(gpt2's folder, the params, the PYTHONPATH entries after ROOT) of a fresh extraction."""
    if not os.path.isfile(ARCHIVE):
        pytest.skip(f"ModelZoo R1.8 archive absent ({ARCHIVE}): the vendor's library lives in ../shared beside "
                    "the project's checkout, not in the repository")
    missing = [pypi for module, pypi in REQUIRES.items() if importlib.util.find_spec(module) is None]
    if missing:
        pytest.skip(f"ModelZoo R1.8 imports {', '.join(missing)} on every path: pip install {' '.join(missing)}")
    base = tmp_path_factory.mktemp("modelzoo18")
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(base, filter="data")
    release = os.path.join(base, "modelzoo-1.8.0")
    data = os.path.join(base, "data")
    _write_hdf5(os.path.join(data, "train"), 64, seed=0)  # 8 loader workers x 2 batches
    _write_hdf5(os.path.join(data, "val"), 32, seed=1)
    return os.path.join(release, GPT2), _params(release, data), [release, *_torchvision_path(str(base))]


def run_py(ws_csd, zoo, model_dir, *args, params=None) -> subprocess.CompletedProcess:
    """gpt2's run.py with the tiny params (or `params`), as a user runs it against csd."""
    folder, tiny, path = zoo
    params = params or tiny
    env = ws_csd.env()
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *path, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    command = [sys.executable, "-m", "csadmin.cstorch", "run.py", "CSX", "weight_streaming", "--params", params,
               "--model_dir", str(model_dir), "--compile_dir", str(model_dir / "compile"), *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def runs(ws_csd) -> list[dict]:
    with ws_csd.client() as c:
        return c.runs_list()["runs"]


def programmings(ws_csd, run_id: str) -> int:
    with ws_csd.client() as c:
        return sum(e["type"] == "EventProgrammingStarted" and e["details"].get("runId") == run_id
                   for e in c.events_show(max_count=2000))


def scalars(log_dir) -> dict:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


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
    with open(zoo[1]) as f:
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
