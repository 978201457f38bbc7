"""Checkpoints interchangeable with the real package (cerebras-pytorch 2.10): its files, written by
bench/real_checkpoints.py (tests/cstorch/storage/fixtures/real_checkpoints), load here bit for bit; ours
have its layout; R1.8's files and this project's earlier ones load; a file that is not a
checkpoint is a BadCheckpoint; and its optimizers' state resumes here on its trajectory."""

import collections
import json
import os
import pickle
import pickletools

import h5py
import pytest
import torch

from csadmin.cstorch import amp, optim
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.backend.config import Config
from csadmin.cstorch.storage.checkpoint import load, save
from csadmin.errors import BadCheckpoint, InvalidArgument
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401
from tests.cstorch.storage.test_checkpoint import _same

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "real_checkpoints")
EXPECTED = torch.load(os.path.join(FIXTURES, "expected.pt"), weights_only=True)
OPTIMIZERS = {  # as bench/real_checkpoints.py built the real ones
    "sgd": lambda params: optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: optim.Adam(params, lr=0.01, eps=1e-8),
    "adamw": lambda params: optim.AdamW(params, lr=0.01, eps=1e-8, weight_decay=0.01),
}


def _fixture(name: str) -> str:
    return os.path.join(FIXTURES, f"{name}.mdl")


@pytest.mark.parametrize("name", ["sgd", "adam", "adamw", "scaler", "nested"])
def test_the_real_packages_files_load_bit_for_bit(name):
    """Every value as the real package recorded it (expected.pt, its torch.save of the same):
    tensors in dtype, shape and bits (bfloat16, float16, bool, int64, 0-d), and the types of
    everything else (OrderedDict, tuple, int keys, None)."""
    _same(load(_fixture(name)), EXPECTED[name])


@pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one
def test_the_real_optimizer_state_names_are_ours():
    for name, make in OPTIMIZERS.items():
        real = load(_fixture(name))["optimizer"]
        ours = make(torch.nn.Linear(3, 2).parameters()).state_dict()
        assert set(ours["param_groups"][0]) == set(real["param_groups"][0]), name
        # Adam/AdamW keep torch's `step` beside the real names (adam.py: torch's bias corrections).
        extra = {"step"} if name in ("adam", "adamw") else set()
        assert {i: set(s) for i, s in ours["state"].items()} == {i: set(s) | extra for i, s in real["state"].items()}, name


@pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_real_optimizer_state_resumes_on_the_real_trajectory(name):
    """The real package's model and optimizer after three steps, loaded here, take the next three
    steps (the recorded batches) to the parameters the real package reached: within float32
    rounding (the two torch releases' kernels and the real Adam's eps placement differ in the last
    bits). A fresh optimizer on the same model ends far from them, so the state is what carried."""
    saved, trajectory = load(_fixture(name)), EXPECTED["trajectories"][name]
    ends = {}
    for resumed in (True, False):
        net = torch.nn.Linear(3, 2)
        net.load_state_dict(saved["model"])
        optimizer = OPTIMIZERS[name](net.parameters())
        if resumed:
            optimizer.load_state_dict(saved["optimizer"])
        for batch in trajectory["batches"]:
            optimizer.zero_grad()
            net(batch).pow(2).mean().backward()
            optimizer.step()
        ends[resumed] = net.state_dict()
    for key, want in trajectory["continued"].items():
        torch.testing.assert_close(ends[True][key], want, rtol=1e-5, atol=1e-6)
    assert max((ends[False][k] - v).abs().max().item() for k, v in trajectory["continued"].items()) > 1e-3


def test_the_real_grad_scaler_state_loads_and_ours_has_its_names():
    real = load(_fixture("scaler"))
    dynamic = amp.GradScaler(loss_scale="dynamic")
    dynamic.load_state_dict(real["dynamic"])
    ours = dynamic.state_dict()
    assert set(ours) == {*real["dynamic"], "clean_steps"}
    for key, value in real["dynamic"].items():
        assert ours[key].dtype == value.dtype and torch.equal(ours[key], value), key
    assert ours["clean_steps"].item() == 0  # an overflow since the last change of scale: no clean run known
    static = amp.GradScaler(loss_scale=2.0)
    static.load_state_dict(real["static"])
    assert static.state_dict() == real["static"] == {"loss_scale": 8.0}


def test_our_file_has_the_real_layout(tmp_path):
    """Loaded from the real package's file and saved here, the same datasets, root attributes and
    metadata come out: dotted keys, LZ4 (HDF5 filter 32004) on every tensor but a 0-d one."""
    state = load(_fixture("adam"))
    save(state, tmp_path / "ours.mdl")
    with h5py.File(_fixture("adam"), "r") as theirs, h5py.File(tmp_path / "ours.mdl", "r") as ours:
        assert set(ours.attrs) == set(theirs.attrs)
        assert ours.attrs["__version__"] == 0.5 and ours.attrs["__SUCCESS__"]
        assert ours.attrs["__cstorch_version__"].startswith("2.10.0")
        assert json.loads(ours.attrs["__spec__"]) == json.loads(theirs.attrs["__spec__"])
        assert sorted(ours) == sorted(theirs)
        assert "optimizer.state.0.exp_avg" in ours and "optimizer.state.1.beta2_power" in ours
        for key in theirs:
            assert json.loads(ours.attrs[f"{key}.__metadata__"]) == json.loads(theirs.attrs[f"{key}.__metadata__"])
            assert set(ours[key].attrs) == set(theirs[key].attrs) | {"crc32"}
            filters = {ours[key].id.get_create_plist().get_filter(i)[0]
                       for i in range(ours[key].id.get_create_plist().get_nfilters())}
            assert filters == ({32004} if ours[key].shape else set()), key
        lr = json.loads(ours.attrs["optimizer.param_groups.0.lr.__metadata__"])
        assert lr["optimizer.param_groups.0.lr.__metadata__"]["scalar_value"] == 0.01


def test_this_projects_earlier_files_still_load():
    """csadmin_v1.mdl, written by this project's cstorch.save before it wrote the real format."""
    expected = {
        "model": collections.OrderedDict([("weight", torch.arange(6, dtype=torch.float32).reshape(2, 3) / 8),
                                          ("bias", torch.tensor([-0.5, 0.25]))]),
        "step": 3, "big": 2**70, "name": "run ✓", "nothing": None, "flag": True, "raw": b"\x00\xff",
        "shape": torch.Size([2, 3]), "pair": (1, [2.5]), "bf16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
        "scalar": torch.tensor(7, dtype=torch.int64),
    }
    _same(load(_fixture("csadmin_v1")), expected)


def _configured_as_r18():
    """The process as an R1.8 script leaves it: configured with cstorch.configure, no cstorch.backend."""
    process_backend.current().config = Config()


def test_an_r18_script_writes_r18s_file_and_it_loads(tmp_path):
    _configured_as_r18()
    state = {"model": collections.OrderedDict([("fc.weight", torch.randn(2, 3)), ("fc.bias", torch.zeros(2))]),
             "optimizer": {"state": {0: {"momentum_buffer": torch.ones(2, 3)}},
                           "param_groups": [{"lr": 0.1, "nesterov": False, "params": [0, 1]}]},
             "global_step": 5, "name": "a/b", "nothing": None, "half": torch.tensor([1.5], dtype=torch.bfloat16)}
    save(state, tmp_path / "r18.mdl")
    with h5py.File(tmp_path / "r18.mdl", "r") as f:
        assert f.attrs["__version__"] == 0.2 and "__cstorch_version__" not in f.attrs
        assert {"model.fc.weight", "optimizer.state.0.momentum_buffer", "name", "half"} <= set(f)
        assert f["half"].attrs["is_bfloat16"] and f["global_step"].attrs["is_scalar"]
        assert f["name"].attrs["string_val"] == "a/b" and f["nothing"].attrs["is_none"]
        spec = bytes.fromhex(f.attrs["__spec__"])
    names = {arg for op, arg, _ in pickletools.genops(spec) if op.name == "SHORT_BINUNICODE"}
    assert {"torch.utils._pytree", "TreeSpec", "LeafSpec"} <= names  # a pickled TreeSpec, as dill wrote it
    process_backend.reset()  # a 2.x process reads it too
    _same(load(tmp_path / "r18.mdl"), state)


def test_r18s_format_refuses_what_it_cannot_hold(tmp_path):
    _configured_as_r18()
    with pytest.raises(InvalidArgument, match="R1.8.s checkpoint holds tensors"):
        save({"raw": b"x"}, tmp_path / "c.mdl")
    assert os.listdir(tmp_path) == []


class _Evil:
    def __reduce__(self):
        return os.system, ("true",)


def test_files_that_are_not_checkpoints_are_bad_checkpoints(tmp_path):
    path = tmp_path / "c.mdl"
    with h5py.File(path, "w") as f:
        f["weights"] = [1.0, 2.0]
    with pytest.raises(BadCheckpoint, match="not a cstorch checkpoint") as refused:
        load(path)
    assert refused.value.code == "BAD_CHECKPOINT"
    cases = [
        ("__SUCCESS__", False, "only partly written"),
        ("__version__", 0.6, "format version 0.6; this cstorch reads versions up to 0.5"),
        ("__spec__", "{not json", "__spec__ is damaged"),
        ("w.__metadata__", json.dumps({"__spec__": [None, '[1, {"type": null, "context": null, "children_spec": []}]'],
                                       "__objects__": [], ".__metadata__": {"__TYPE__": "Pickled"}}),
         "entry 'w' is damaged"),
    ]
    for attr, value, message in cases:
        save({"w": torch.ones(3)}, path)
        with h5py.File(path, "r+") as f:
            f.attrs[attr] = value
        with pytest.raises(BadCheckpoint, match=message):
            load(path)


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    """R1.8's spec and the 2.x ObjectSerializer are pickles: a name outside a state dict's own is
    refused, and nothing runs."""
    path = tmp_path / "c.mdl"
    save({"shape": torch.Size([2])}, path)
    with h5py.File(path, "r+") as f:
        f["shape"].attrs["__BYTES__"] = __import__("numpy").void(pickle.dumps(_Evil()))
    with pytest.raises(BadCheckpoint, match="names (posix|nt).system; loading it would run code"):
        load(path)
    _configured_as_r18()
    save({"w": torch.ones(1)}, path)
    with h5py.File(path, "r+") as f:
        f.attrs["__spec__"] = pickle.dumps(_Evil()).hex()
    with pytest.raises(BadCheckpoint, match="__spec__ is not a state dict's structure.*would run code"):
        load(path)


def test_a_spec_nested_beyond_any_state_dict_is_refused(tmp_path):
    path = tmp_path / "c.mdl"
    save({"w": torch.ones(1)}, path)
    node = {"type": None, "context": None, "children_spec": []}
    for _ in range(101):
        node = {"type": "builtins.list", "context": "null", "children_spec": [node]}
    with h5py.File(path, "r+") as f:
        f.attrs["__spec__"] = json.dumps([None, json.dumps([1, node])])
    with pytest.raises(BadCheckpoint, match="entries nested more than 100 levels deep"):
        load(path)


def test_values_whose_dotted_keys_collide_are_refused(tmp_path):
    """The file names each value by its keys joined with "."; two that join alike cannot both be kept."""
    with pytest.raises(InvalidArgument, match=r"state_dict\['a'\]\['b'\]: its key 'a.b' is also state_dict\['a.b'\]'s"):
        save({"a.b": torch.ones(1), "a": {"b": torch.zeros(1)}}, tmp_path / "c.mdl")
    assert os.listdir(tmp_path) == []


def test_map_location_takes_the_real_packages_cache(tmp_path):
    save({"w": torch.ones(2)}, tmp_path / "c.mdl")
    assert torch.equal(load(tmp_path / "c.mdl", map_location="cache")["w"], torch.ones(2))


# What the real 2.10 classes' state_dict() holds after one step on a Linear(3, 2) (state names of
# parameter 0, param-group keys), recorded by running them (bench/real_checkpoints.py's venv).
REAL_NAMES = {
    "SGD": (dict(lr=0.1, momentum=0.9), {"momentum_buffer"},
            {"dampening", "lr", "maximize", "momentum", "nesterov", "weight_decay"}),
    "Adam": (dict(lr=0.01, amsgrad=True), {"beta1_power", "beta2_power", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"},
             {"amsgrad", "betas", "correct_bias", "eps", "l2_regularization_rate", "lr", "weight_decay"}),
    "AdamW": (dict(lr=0.01), {"beta1_power", "beta2_power", "exp_avg", "exp_avg_sq"},
              {"amsgrad", "betas", "correct_bias", "eps", "l2_regularization_rate", "lr", "weight_decay"}),
    "ASGD": (dict(lr=0.01), {"ax", "eta", "mu", "step"}, {"alpha", "lambd", "lr", "maximize", "t0", "weight_decay"}),
    "Adadelta": (dict(), {"acc_delta", "square_avg"}, {"eps", "lr", "maximize", "rho", "weight_decay"}),
    "Adagrad": (dict(), {"step", "sum"},
                {"eps", "initial_accumulator_value", "lr", "lr_decay", "maximize", "weight_decay"}),
    "Adamax": (dict(), {"beta1_power", "exp_avg", "exp_inf"}, {"betas", "eps", "lr", "maximize", "weight_decay"}),
    "NAdam": (dict(), {"exp_avg", "exp_avg_sq", "mu_product", "step"},
              {"betas", "eps", "lr", "momentum_decay", "weight_decay"}),
    "RAdam": (dict(), {"exp_avg", "exp_avg_sq", "step"}, {"betas", "eps", "lr", "weight_decay"}),
    "RMSprop": (dict(momentum=0.9, centered=True), {"grad_avg", "momentum_buffer", "square_avg"},
                {"alpha", "centered", "eps", "lr", "momentum", "weight_decay"}),
    "Rprop": (dict(), {"prev", "step_size"}, {"etas", "lr", "step_sizes"}),
    "Lion": (dict(), {"exp_avg"}, {"betas", "lr", "weight_decay"}),
    "Lamb": (dict(), {"exp_avg", "exp_avg_sq"}, {"adam", "betas", "eps", "lr", "weight_decay"}),
    "Adafactor": (dict(lr=0.01), {"exp_avg_sq_col", "exp_avg_sq_row", "step"},
                  {"beta1", "clip_threshold", "decay_rate", "eps", "lr", "relative_step", "scale_parameter",
                   "warmup_init", "weight_decay"}),
}


@pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one
@pytest.mark.parametrize("name", sorted(REAL_NAMES))
def test_every_optimizer_keeps_the_real_classes_names(name):
    kwargs, state_names, group_keys = REAL_NAMES[name]
    net = torch.nn.Linear(3, 2)
    optimizer = getattr(optim, name)(net.parameters(), **kwargs)
    net(torch.randn(4, 3)).sum().backward()
    optimizer.step()
    saved = optimizer.state_dict()
    # Adam/AdamW keep torch's `step` beside the real names: their bias corrections are torch's (adam.py).
    assert set(saved["state"][0]) == state_names | ({"step"} if name in ("Adam", "AdamW") else set())
    assert set(saved["param_groups"][0]) - {"params"} == group_keys
