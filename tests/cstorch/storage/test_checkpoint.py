"""cstorch.save / cstorch.load against real files: exact round trips, atomic writes, and every way a
file can fail to be a checkpoint ending as a BadCheckpoint that names it."""

import collections
import json
import math
import os

import h5py
import pytest
import torch

from csadmin.cstorch.storage.checkpoint import load, save
from csadmin.errors import BadCheckpoint, InvalidArgument, NotFound

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8, torch.int16,
          torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128, torch.float8_e4m3fn,
          torch.float8_e5m2]


def _same(a, b):
    """Equal in value and type all the way down (tensors: dtype, shape and bits)."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        bits = (lambda t: t.contiguous().reshape(-1).view(torch.uint8)) if a.numel() else (lambda t: t)
        assert torch.equal(bits(a), bits(b))
    elif isinstance(a, dict):
        assert list(a) == list(b) and [type(k) for k in a] == [type(k) for k in b]
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b)
    else:
        assert a == b and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3, 5)], ids=str)
def test_a_tensor_of_every_dtype_and_shape_round_trips_bit_for_bit(tmp_path, dtype, shape):
    source = (torch.randn(shape, dtype=torch.float64) * 100)
    tensor = source.to(dtype) if dtype != torch.bool else source > 0
    save({"t": tensor}, tmp_path / "c.mdl")
    _same(load(tmp_path / "c.mdl"), {"t": tensor})


def test_nested_state_dicts_with_every_scalar_type_round_trip_exactly(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(5, 4)).sum().backward()
    sgd.step()
    state = {
        "model": model.state_dict(),  # an OrderedDict, with an int64 0-d num_batches_tracked
        "optimizer": sgd.state_dict(),  # state keyed by int, param_groups of floats, bools, None
        "global_step": 7, "big": 2**70, "neg": -(2**63), "ratio": 0.1, "nan": float("nan"),
        "inf": float("-inf"), "zero": -0.0, "flag": False, "nothing": None, "name": "run ✓ ß",
        "empty": "", "raw": b"\x00\xff", "shape": torch.Size([2, 3]), "pair": (1, [2.5, (None,)]),
        "keys": {1: "int", 1.5: "float", True: "bool", None: "none", "a/b.c": "slashes"},
        "nothing_inside": {}, "no_items": [], "bf16_scalar": torch.tensor(1.5, dtype=torch.bfloat16),
    }
    save(state, tmp_path / "c.mdl")
    _same(load(tmp_path / "c.mdl"), state)


def test_a_loaded_model_and_optimizer_resume_where_they_were(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    adam = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(3):
        adam.zero_grad()
        model(torch.randn(4, 3)).pow(2).sum().backward()
        adam.step()
    save({"model": model.state_dict(), "optimizer": adam.state_dict()}, tmp_path / "c.mdl")
    loaded = load(tmp_path / "c.mdl")
    twin = torch.nn.Linear(3, 2)
    twin_adam = torch.optim.Adam(twin.parameters(), lr=0.5)
    twin.load_state_dict(loaded["model"])
    twin_adam.load_state_dict(loaded["optimizer"])
    batch = torch.randn(4, 3)
    for m, o in ((model, adam), (twin, twin_adam)):
        o.zero_grad()
        m(batch).pow(2).sum().backward()
        o.step()
    assert torch.equal(model.weight, twin.weight) and torch.equal(model.bias, twin.bias)


def test_load_with_map_location_cpu_then_torch_save_gives_a_plain_pytorch_checkpoint(tmp_path):
    model = torch.nn.Linear(3, 2)
    save({"model": model.state_dict(), "step": 3}, tmp_path / "c.mdl")
    torch.save(load(tmp_path / "c.mdl", map_location="cpu"), tmp_path / "c.pt")
    plain = torch.load(tmp_path / "c.pt", weights_only=True)
    assert plain["step"] == 3 and torch.equal(plain["model"]["weight"], model.weight.detach())
    assert load(tmp_path / "c.mdl", map_location=torch.device("cpu"))["model"]["bias"].device.type == "cpu"
    with pytest.raises(InvalidArgument, match="map_location"):
        load(tmp_path / "c.mdl", map_location="no-such-device")


def test_save_replaces_the_file_atomically_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "c.mdl"
    save({"v": 1}, path)
    os.chmod(tmp_path, 0o755)
    save({"v": 2}, path)
    assert load(path) == {"v": 2} and os.listdir(tmp_path) == ["c.mdl"]


def test_an_unsupported_value_is_refused_naming_where_and_the_old_file_stays(tmp_path):
    path = tmp_path / "c.mdl"
    save({"v": 1}, path)
    for bad, where in (({"model": {"w": object()}}, "state_dict['model']['w']"),
                       ({"x": [1, {2: {(1, 2): 3}}]}, "state_dict['x'][1][2]"),
                       ({"s": torch.eye(2).to_sparse()}, "state_dict['s']")):
        with pytest.raises(InvalidArgument) as refused:
            save(bad, path)
        assert where in str(refused.value)
    assert load(path) == {"v": 1} and os.listdir(tmp_path) == ["c.mdl"]


def test_paths_that_are_not_checkpoints_are_clear_errors_naming_the_file(tmp_path):
    with pytest.raises(NotFound, match="missing.mdl"):
        load(tmp_path / "missing.mdl")
    with pytest.raises(NotFound, match="no directory"):
        save({}, tmp_path / "nowhere" / "c.mdl")
    with pytest.raises(BadCheckpoint, match="directory"):
        load(tmp_path)
    (tmp_path / "text.mdl").write_text("not hdf5 at all\n" * 100)
    with pytest.raises(BadCheckpoint, match="text.mdl.*not an HDF5 file"):
        load(tmp_path / "text.mdl")
    with h5py.File(tmp_path / "foreign.h5", "w") as f:
        f["weights"] = [1.0, 2.0]
    with pytest.raises(BadCheckpoint, match="foreign.h5.*not a cstorch checkpoint"):
        load(tmp_path / "foreign.h5")
    with pytest.raises(InvalidArgument, match="str or os.PathLike"):
        save({}, 3)


def test_a_truncated_checkpoint_is_refused(tmp_path):
    path = tmp_path / "c.mdl"
    save({"w": torch.randn(256, 256)}, path)
    size = os.path.getsize(path)
    for keep in (size // 2, size - 1, 100, 0):
        os.truncate(path, keep)
        with pytest.raises(BadCheckpoint, match="c.mdl"):
            load(path)


def test_a_damaged_byte_inside_a_tensor_is_found_by_its_crc(tmp_path):
    path = tmp_path / "c.mdl"
    weights = torch.arange(4096, dtype=torch.float32)
    save({"model": {"w": weights}}, path)
    with h5py.File(path, "r") as f:
        offset = f["model.w"].id.get_chunk_info(0).byte_offset  # its LZ4-compressed chunk
    with open(path, "r+b") as f:
        f.seek(offset + 1000)
        byte = f.read(1)
        f.seek(offset + 1000)
        f.write(bytes([byte[0] ^ 0x40]))
    with pytest.raises(BadCheckpoint, match=r"c.mdl: its entry 'model.w' is damaged \(its CRC-32 does not match its "
                                            r"bytes\)"):
        load(path)


def test_an_ordered_dict_stays_ordered_and_a_dict_stays_a_dict(tmp_path):
    state = {"o": collections.OrderedDict([("b", 1), ("a", 2)]), "d": {"b": 1, "a": 2}}
    save(state, tmp_path / "c.mdl")
    loaded = load(tmp_path / "c.mdl")
    assert type(loaded["o"]) is collections.OrderedDict and list(loaded["o"]) == ["b", "a"]
    assert type(loaded["d"]) is dict and list(loaded["d"]) == ["b", "a"]


def test_an_entry_removed_or_rewritten_by_another_program_is_named(tmp_path):
    path = tmp_path / "c.mdl"
    save({"model": {"w": torch.ones(3), "b": torch.zeros(2)}, "step": 3}, path)
    with h5py.File(path, "r+") as f:
        del f["model.b"]
    with pytest.raises(BadCheckpoint, match=r"c.mdl: its entry 'model.b' is damaged"):
        load(path)
    save({"w": torch.ones(3)}, path)
    with h5py.File(path, "r+") as f:
        f["w"][...] = [1.0, 2.0, 3.0]  # rewritten without updating its CRC
    with pytest.raises(BadCheckpoint, match=r"its entry 'w' is damaged \(its CRC-32 does not match"):
        load(path)


def test_hostile_structures_are_refused_not_crashed_on(tmp_path):
    looped: dict = {}
    looped["self"] = looped
    with pytest.raises(InvalidArgument, match="nested more than 100 levels deep"):
        save(looped, tmp_path / "loop.mdl")
    assert os.listdir(tmp_path) == []
    path = tmp_path / "c.mdl"
    node = '{"type": null, "context": null, "children_spec": []}'
    for _ in range(101):  # a structure nested far deeper than any state dict
        node = f'{{"type": "builtins.dict", "context": "[\\"x\\"]", "children_spec": [{node}]}}'
    save({"a": 1}, path)
    with h5py.File(path, "r+") as f:
        f.attrs["__spec__"] = json.dumps([None, f"[1, {node}]"])
    with pytest.raises(BadCheckpoint, match=r"c.mdl: its __spec__ is damaged \(entries nested more than 100 "
                                            r"levels deep"):
        load(path)
    for meta, message in (({"__TYPE__": "TorchTensorSerializer", "dtypes": ["torch.Tensor"], "shapes": [[]]},
                           "unknown dtype"),
                          ({"__TYPE__": "pickle"}, "the serializer 'pickle'"),
                          ("{not json", "damaged")):
        save({"a": torch.ones(())}, path)
        with h5py.File(path, "r+") as f:
            recorded = json.loads(f.attrs["a.__metadata__"])
            recorded["a.__metadata__"] = meta
            f.attrs["a.__metadata__"] = json.dumps(recorded) if isinstance(meta, dict) else meta
        with pytest.raises(BadCheckpoint, match=message):
            load(path)


SAVER = """
import sys, torch
from csadmin.cstorch.storage.checkpoint import save
path = sys.argv[1]
save({"version": 1, "w": torch.zeros(16, 1024, 1024)}, path)
print("saved", flush=True)
while True:
    save({"version": 2, "w": torch.ones(16, 1024, 1024)}, path)
"""


@pytest.mark.integration  # a real child process, interrupted mid-save
def test_ctrl_c_during_a_save_leaves_a_whole_checkpoint_and_no_temporary(tmp_path):
    """A real process saving 64 MiB checkpoints in a loop, sent SIGINT while a temporary file is
    being written: the checkpoint is the old one or the new one, whole, and nothing else is left."""
    import signal
    import subprocess
    import sys

    from tests.harness import ROOT, wait_until

    path = tmp_path / "c.mdl"
    saver = subprocess.Popen([sys.executable, "-c", SAVER, str(path)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert saver.stdout.readline() == "saved\n"
        for _ in range(20):
            wait_until(lambda: any(name.endswith(".tmp") for name in os.listdir(tmp_path)), timeout=60,
                       interval=0.001, what="a save in progress")
            saver.send_signal(signal.SIGINT)
            try:
                saver.wait(timeout=10)
                break
            except subprocess.TimeoutExpired:
                continue  # CPython drops an interrupt that lands in a weakref callback: press Ctrl-C again
        _, stderr = saver.communicate(timeout=60)
    finally:
        saver.kill()
    assert saver.returncode != 0 and "KeyboardInterrupt" in stderr
    assert os.listdir(tmp_path) == ["c.mdl"]
    loaded = load(path)
    assert torch.equal(loaded["w"], torch.full((16, 1024, 1024), float(loaded["version"] - 1)))


def test_the_real_attribute_names_and_save_load_switches(tmp_path):
    """ModelZoo's checkpoint tools read a file's `__cstorch_version__` by the constant's name, and
    its trainer saves its autorestart file under use_external_link(True): the file is the same."""
    import csadmin.cstorch as cstorch

    state = {"w": torch.arange(6.0).view(2, 3), "step": 3}
    save(state, str(tmp_path / "plain.mdl"))
    with h5py.File(tmp_path / "plain.mdl", "r") as f:
        assert cstorch.storage.constants.__CSTORCH_VERSION__ in f.attrs
    flags = cstorch.storage.serializers
    assert not flags.use_external_link and flags.cache_deferred_tensors
    with flags.use_external_link(True), flags.cache_deferred_tensors(False):
        assert flags.use_external_link and not flags.cache_deferred_tensors
        save(state, str(tmp_path / "linked.mdl"))
    assert not flags.use_external_link and flags.cache_deferred_tensors  # restored after the body
    linked = load(str(tmp_path / "linked.mdl"))
    assert torch.equal(linked["w"], state["w"]) and linked["step"] == 3
