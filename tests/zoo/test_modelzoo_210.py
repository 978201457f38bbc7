"""The vendor's ModelZoo 2.10, unmodified, trains with `cszoo fit` and validates with `cszoo
validate`, run as its users run them, under `python -m csadmin.cstorch`:

    python -m csadmin.cstorch cszoo fit params.yaml [--checkpoint_path CKPT]
    python -m csadmin.cstorch cszoo validate params.yaml --checkpoint_path CKPT

on the CSX backend against a real csd and on the CPU backend. The release
(../shared/modelzoo/modelzoo-2.10.0.tar.gz beside the checkout) is extracted to a temp folder and
never edited; nothing is installed at test time: its `src` goes on PYTHONPATH and `cszoo` is the
console script pip would write for its entry point (cerebras.modelzoo.cli.main:main), on PATH.

The params are the release's own Cerebras_GPT/111m.yaml (GPT-3 family), params_llama2_7b.yaml and
mixtral's params_moe_111M_base.yaml (a mixture of experts), shrunk in size only (layers, widths,
heads, vocabulary, sequence length, batch, steps, the schedule's lengths, and `loss_weight`, which
111m.yaml sets to 1/max_sequence_length), their data pointed at small synthetic HDF5 files in the
layout their data processors read (create_hdf5_dataset's: `data` [n, 3, msl] int32 of input_ids,
attention_mask, labels, attribute n_examples), and their loaders given num_workers 0 (the machine
has two cores). The data is learnable: each sequence counts up from a random token, so the loss
falls within a few steps.

Skips, saying why, where the archive is absent (a fresh clone without ../shared), where the
release's requirements are not installed (`make install` installs them: the `zoo` extra and
bigcode_eval from ../shared). torchvision, which the fit path imports but gpt and llama never use, cannot load beside
the project's CPU build of torch (PyPI's is built for CUDA torch: `operator torchvision::nms does
not exist`), so the scripts get a stand-in of that name that raises ImportError on any use.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile

import numpy as np
import pytest
import yaml

from tests.cstorch.helpers import ws_csd  # noqa: F401  (the fixture)
from tests.harness import ROOT
from tests.zoo.releases import SHARED, require_release

ARCHIVE = os.path.join(SHARED, "modelzoo-2.10.0.tar.gz")
NLP = "src/cerebras/modelzoo/models/nlp"
CONFIGS = {"gpt3": "gpt3/configs/Cerebras_GPT/111m.yaml", "llama": "llama/configs/params_llama2_7b.yaml",
           "moe": "mixtral/configs/params_moe_111M_base.yaml"}
# What the fit path imports beyond torch, h5py, numpy and yaml (module name: PyPI name).
REQUIRES = {"pydantic": "pydantic", "transformers": "transformers", "pandas": "pandas", "lm_eval": "lm-eval",
            "evaluate": "evaluate", "bigcode_eval": "bigcode_eval (../shared)", "slack_sdk": "slack_sdk",
            "argcomplete": "argcomplete", "tabulate": "tabulate", "rich": "rich", "tqdm": "tqdm"}
BATCH, MSL, VOCAB = 4, 16, 64
MODEL = {"vocab_size": VOCAB, "hidden_size": 32, "max_position_embeddings": MSL, "num_hidden_layers": 2,
         "num_heads": 2, "filter_size": 64}
STEP = re.compile(r"\| Train Device=\S+, Step=(\d+), Loss=([0-9.]+)")

TORCHVISION = '''"""Not torchvision: a tests/zoo stand-in for a package the fit path imports and gpt and llama
never use. Any name resolves; calling one raises ImportError."""


class _Missing:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        raise ImportError(f"{self._name}: torchvision is not installed (tests/zoo stand-in)")


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(f"{__name__}.{name}")
'''
CSZOO = "#!{python}\nimport sys\nfrom cerebras.modelzoo.cli.main import main\n\nif __name__ == '__main__':\n" \
        "    sys.exit(main())\n"


def _write_hdf5(folder, examples: int, seed: int) -> None:
    """`examples` counting sequences in create_hdf5_dataset.py's layout (one file)."""
    import h5py

    os.makedirs(folder)
    start = np.random.default_rng(seed).integers(0, VOCAB, size=(examples, 1))
    ids = (start + np.arange(MSL + 1)) % VOCAB
    data = np.stack([ids[:, :-1], np.ones((examples, MSL), np.int64), ids[:, 1:]], axis=1).astype("i4")
    with h5py.File(os.path.join(folder, "data-0.h5"), "w") as f:
        f.attrs["n_examples"] = examples
        f.create_dataset("data", data=data, dtype="i4", chunks=(1, 3, MSL), compression="gzip")


def _tools(base: str) -> tuple[str, str]:
    """(the folder of the torchvision stand-in, the folder holding `cszoo`)."""
    standin = os.path.join(base, "no-torchvision")
    for module in ("__init__", "ops/__init__", "io/__init__", "io/image", "transforms/__init__",
                   "transforms/functional", "transforms/transforms", "transforms/autoaugment"):
        path = os.path.join(standin, "torchvision", module + ".py")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(TORCHVISION)
    bin_dir = os.path.join(base, "bin")
    os.makedirs(bin_dir)
    with open(os.path.join(bin_dir, "cszoo"), "w") as f:
        f.write(CSZOO.format(python=sys.executable))
    os.chmod(os.path.join(bin_dir, "cszoo"), 0o755)
    return standin, bin_dir


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """(the release's root, the data folder, the extra PYTHONPATH entries, the folder of cszoo)."""
    require_release(ARCHIVE, "2.10", REQUIRES, "`make install` installs them")
    base = str(tmp_path_factory.mktemp("modelzoo210"))
    with tarfile.open(ARCHIVE) as tar:
        tar.extractall(base, filter="data")
    release = os.path.join(base, "modelzoo-2.10.0")
    data = os.path.join(base, "data")
    _write_hdf5(os.path.join(data, "train"), 64, seed=0)
    _write_hdf5(os.path.join(data, "val"), 32, seed=1)
    standin, bin_dir = _tools(base)
    return release, data, [os.path.join(release, "src"), standin], bin_dir


def params(zoo, folder, model: str, backend: str, max_steps: int, checkpoint_steps: int) -> str:
    """The release's config of `model` shrunk (see the module docstring), its run in
    `folder`/model_dir; the path of the copy, written in `folder`."""
    release, data, _, _ = zoo
    with open(os.path.join(release, NLP, CONFIGS[model])) as f:
        config = yaml.safe_load(f)
    init, fit = config["trainer"]["init"], config["trainer"]["fit"]
    init.setdefault("backend", {})["backend_type"] = backend  # the MoE config names none: CSX
    init["model"].update(MODEL)
    if "rotary_dim" in init["model"]:
        init["model"]["rotary_dim"] = MODEL["hidden_size"] // MODEL["num_heads"]
    if init["model"].get("loss_weight", 1.0) != 1.0:  # 111m.yaml: "= 1/max_sequence_length"
        init["model"]["loss_weight"] = 1.0 / MSL
    init["model_dir"] = os.path.join(folder, "model_dir")
    init["loop"].update(max_steps=max_steps, eval_frequency=max_steps, eval_steps=2)
    init["checkpoint"]["steps"] = checkpoint_steps
    init["logging"]["log_steps"] = 1
    _shorten(init["schedulers"], total_iters=4)
    for name, split in (("train_dataloader", "train"), ("val_dataloader", "val")):
        loader = fit[name]
        loader.update(data_dir=os.path.join(data, split), batch_size=BATCH, num_workers=0)
        loader.pop("prefetch_factor", None)
        loader.pop("persistent_workers", None)
    config["trainer"]["validate"]["val_dataloader"] = fit["val_dataloader"]
    config["trainer"]["validate_all"]["val_dataloaders"] = fit["val_dataloader"]
    path = os.path.join(folder, f"params_{model}_{backend.lower()}_{max_steps}.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    return path


def _shorten(schedulers, total_iters: int) -> None:
    """Every schedule in `schedulers` (nested: SequentialLR, ScalePerParamLR) `total_iters` long."""
    if isinstance(schedulers, dict):
        for key, value in schedulers.items():
            if key == "total_iters":
                schedulers[key] = total_iters
            else:
                _shorten(value, total_iters)
    elif isinstance(schedulers, list):
        for value in schedulers:
            _shorten(value, total_iters)


def cszoo(zoo, folder, *args, env=None) -> subprocess.CompletedProcess:
    """`python -m csadmin.cstorch cszoo ARGS` from `folder`, as a user runs it (against the csd
    of `env`, if given)."""
    _, _, path, bin_dir = zoo
    env = dict(env or os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, *path, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    command = [sys.executable, "-m", "csadmin.cstorch", "cszoo", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def losses(log: str) -> dict[int, float]:
    return {int(step): float(loss) for step, loss in STEP.findall(log)}


def checkpoints(model_dir) -> list[str]:
    return sorted(f for f in os.listdir(model_dir) if f.endswith(".mdl"))


def new_runs(daemon, before: int) -> list[dict]:
    """The runs csd opened since it knew `before`, oldest first, each with its programmings."""
    with daemon.client() as c:
        found = c.runs_list()["runs"]
        events = c.events_show(max_count=4000)
    found = list(reversed(found[: len(found) - before]))
    for record in found:
        record["programmed"] = sum(e["type"] == "EventProgrammingStarted" and e["details"].get("runId") ==
                                   record["runId"] for e in events)
    return found


def run_count(daemon) -> int:
    with daemon.client() as c:
        return len(c.runs_list()["runs"])


def scalars(log_dir) -> dict:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)} for tag in acc.Tags()["scalars"]}


def _summary(runs: list[dict]) -> list[tuple]:
    return [(r["mode"], r["status"], r["totalSamples"], r["programmed"]) for r in runs]


def test_gpt3_fits_on_csd_resumes_in_a_new_process_and_validates(ws_csd, zoo, tmp_path):
    import csadmin.cstorch as cstorch

    before = run_count(ws_csd)
    first = params(zoo, tmp_path, "gpt3", "CSX", max_steps=4, checkpoint_steps=2)
    done = cszoo(zoo, tmp_path, "fit", first, env=ws_csd.env())
    assert done.returncode == 0, done.stderr[-4000:]
    log = done.stdout + done.stderr
    assert sorted(losses(log)) == [1, 2, 3, 4] and "Training completed successfully!" in log
    assert "Evaluation completed successfully!" in log
    # DurationProfiler times each batch from its fetch hook: never a negative time left
    assert "LoopTimeRemaining=" in log and not re.search(r"TimeRemaining[=>]-", log)
    # one run per mode, each programmed once, samples = steps x batch
    assert _summary(new_runs(ws_csd, before)) == [("train", "CLOSED", 4 * BATCH, 1), ("eval", "CLOSED", 2 * BATCH, 1)]
    model_dir = tmp_path / "model_dir"
    assert checkpoints(model_dir) == ["checkpoint_2.mdl", "checkpoint_4.mdl"]  # ModelZoo's names
    state = cstorch.load(str(model_dir / "checkpoint_4.mdl"))
    assert state["global_step"] == 4 and state["optimizer"]["state"]
    board = scalars(model_dir / "events")
    assert sorted(board["loss"]) == [1, 2, 3, 4] and "validate_0/loss" in board  # TensorBoard, model_dir/events
    info = cszoo(zoo, tmp_path, "checkpoint", "info", str(model_dir / "checkpoint_4.mdl"))  # ModelZoo's reader
    assert info.returncode == 0, info.stderr[-3000:]
    assert "Total checkpoint size:" in info.stdout and "Cerebras PyTorch Version: 2.10.0" in info.stdout

    # a new process resumes from the checkpoint: steps 5 to 8, the weights it trained on
    before = run_count(ws_csd)
    second = params(zoo, tmp_path, "gpt3", "CSX", max_steps=8, checkpoint_steps=2)
    done = cszoo(zoo, tmp_path, "fit", second, "--checkpoint_path", str(model_dir / "checkpoint_4.mdl"),
                 env=ws_csd.env())
    assert done.returncode == 0, done.stderr[-4000:]
    log = done.stdout + done.stderr
    assert f"Loading weights from checkpoint {model_dir / 'checkpoint_4.mdl'}" in log
    assert "from global step 5 to 8" in log and sorted(losses(log)) == [5, 6, 7, 8]
    assert _summary(new_runs(ws_csd, before)) == [("train", "CLOSED", 4 * BATCH, 1), ("eval", "CLOSED", 2 * BATCH, 1)]
    assert checkpoints(model_dir) == [f"checkpoint_{n}.mdl" for n in (2, 4, 6, 8)]
    last = cstorch.load(str(model_dir / "checkpoint_8.mdl"))
    assert last["global_step"] == 8
    assert any(not np.array_equal(state["model"][k].numpy(), last["model"][k].numpy()) for k in last["model"])

    # validate over the last checkpoint: one eval run of eval_steps batches
    before = run_count(ws_csd)
    done = cszoo(zoo, tmp_path, "validate", second, "--checkpoint_path", str(model_dir / "checkpoint_8.mdl"),
                 env=ws_csd.env())
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Evaluation completed successfully!" in done.stdout + done.stderr
    assert _summary(new_runs(ws_csd, before)) == [("eval", "CLOSED", 2 * BATCH, 1)]


def test_gpt3_fits_on_the_cpu_backend_and_the_loss_falls(zoo, tmp_path):
    done = cszoo(zoo, tmp_path, "fit", params(zoo, tmp_path, "gpt3", "CPU", max_steps=8, checkpoint_steps=4))
    assert done.returncode == 0, done.stderr[-4000:]
    log = done.stdout + done.stderr
    loss = losses(log)
    assert sorted(loss) == list(range(1, 9)) and "| Train Device=cpu" in log
    assert loss[8] < loss[1], loss
    assert checkpoints(tmp_path / "model_dir") == ["checkpoint_4.mdl", "checkpoint_8.mdl"]


@pytest.mark.parametrize("backend", ["CSX", "CPU"])
def test_llama_fits_and_validates(ws_csd, zoo, tmp_path, backend):
    before = run_count(ws_csd)
    done = cszoo(zoo, tmp_path, "fit", params(zoo, tmp_path, "llama", backend, max_steps=4, checkpoint_steps=4),
                 env=ws_csd.env())
    assert done.returncode == 0, done.stderr[-4000:]
    log = done.stdout + done.stderr
    assert sorted(losses(log)) == [1, 2, 3, 4] and "Evaluation completed successfully!" in log
    # params_llama2_7b.yaml saves an initial checkpoint
    assert checkpoints(tmp_path / "model_dir") == ["checkpoint_0.mdl", "checkpoint_4.mdl"]
    expected = [("train", "CLOSED", 4 * BATCH, 1), ("eval", "CLOSED", 2 * BATCH, 1)] if backend == "CSX" else []
    assert _summary(new_runs(ws_csd, before)) == expected
    if backend == "CSX":  # validate over the checkpoint: one eval run of eval_steps batches
        before = run_count(ws_csd)
        done = cszoo(zoo, tmp_path, "validate", params(zoo, tmp_path, "llama", backend, max_steps=4, checkpoint_steps=4),
                     "--checkpoint_path", str(tmp_path / "model_dir" / "checkpoint_4.mdl"), env=ws_csd.env())
        assert done.returncode == 0, done.stderr[-4000:]
        assert _summary(new_runs(ws_csd, before)) == [("eval", "CLOSED", 2 * BATCH, 1)]


def test_a_mixture_of_experts_fits_on_csd(ws_csd, zoo, tmp_path):
    """params_moe_111M_base.yaml: its experts' layers call cstorch.nn.functional.sparse_act_matmul,
    its router one_hot; per-parameter learning rates (ScalePerParamLR), ALiBi, bfloat16 with
    dynamic loss scaling."""
    before = run_count(ws_csd)
    done = cszoo(zoo, tmp_path, "fit", params(zoo, tmp_path, "moe", "CSX", max_steps=4, checkpoint_steps=4),
                 env=ws_csd.env())
    assert done.returncode == 0, done.stderr[-4000:]
    log = done.stdout + done.stderr
    assert sorted(losses(log)) == [1, 2, 3, 4] and "Evaluation completed successfully!" in log
    assert checkpoints(tmp_path / "model_dir") == ["checkpoint_0.mdl", "checkpoint_4.mdl"]  # save_initial_checkpoint
    assert _summary(new_runs(ws_csd, before)) == [("train", "CLOSED", 4 * BATCH, 1), ("eval", "CLOSED", 2 * BATCH, 1)]
