"""The later releases' top-level names a script touches, against a real csd where the backend
matters: use_cs / current_torch_device / current_backend_impl / get_backend_args, Backend and
BackendType, the one-value tensor factories, from_numpy / to_numpy, SyntheticDataset, the
top-level DataLoader and the saver module — each before a backend exists, on CSX and on CPU."""

import itertools
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch import state
from tests.cstorch.helpers import model
from tests.cstorch.v2 import Trainer, csx

FACTORIES = [("full", lambda f: f((2, 3), 1.5)), ("full int", lambda f: f((4,), 7)),
             ("ones", lambda f: f((2, 2))), ("zeros", lambda f: f(3, dtype=torch.int32))]
LIKES = [("full_like", lambda f, t: f(t, 2.5)), ("ones_like", lambda f, t: f(t)),
         ("zeros_like", lambda f, t: f(t, dtype=torch.bfloat16))]


def _torch_name(label: str) -> str:
    return label.split()[0]


def test_before_a_backend_the_queries_answer_no_backend_and_the_factories_are_torchs():
    assert cstorch.use_cs() is False
    assert cstorch.current_torch_device() == torch.device("cpu")
    assert cstorch.current_backend_impl(raise_exception=False) is None
    with pytest.raises(errors.InvalidState, match=r"^No active Cerebras backend found"):
        cstorch.current_backend_impl()
    assert state.current().backend_type is None
    for label, make in FACTORIES:
        ours, theirs = make(getattr(cstorch, _torch_name(label))), make(getattr(torch, _torch_name(label)))
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), label
    other = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    for label, make in LIKES:
        ours, theirs = make(getattr(cstorch, label), other), make(getattr(torch, label), other)
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), label
    with torch.device("meta"):  # torch's default device applies, as torch.full's does
        assert cstorch.ones((2,)).device.type == "meta"


def test_on_csx_use_cs_is_true_and_the_backend_answers_as_the_real_one(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    assert cstorch.use_cs() is True
    assert cstorch.current_backend_impl() is backend is cstorch.backend()
    assert isinstance(backend, cstorch.Backend)
    assert backend.backend_type is cstorch.BackendType.CSX and backend.backend_type.name == "CSX"
    assert (backend.is_e2e_execution, backend.compile_only, backend.validate_only) == (True, False, False)
    assert cstorch.current_torch_device() == backend.torch_device == torch.device("cpu")
    # the factories make the tensor on the backend's device, whatever torch's default device is
    with torch.device("meta"):
        made = cstorch.full((2, 2), 3.0)
    assert made.device == backend.torch_device and torch.equal(made, torch.full((2, 2), 3.0))
    for label, make in FACTORIES:
        ours, theirs = make(getattr(cstorch, _torch_name(label))), make(getattr(torch, _torch_name(label)))
        assert ours.dtype == theirs.dtype and torch.equal(ours, theirs), label
    # is_tracing: inside a traced step, not outside it
    trainer = Trainer(backend, model)
    seen = []

    def body(batch):
        seen.append(cstorch.current_backend_impl().is_tracing)
        return trainer.body(batch)

    step = cstorch.trace(body)
    for batch in cstorch.utils.data.DataExecutor(cstorch.DataLoader(_synthetic_input), num_steps=2):
        step(batch)
    assert seen and all(seen) and backend.is_tracing is False


def test_a_compile_only_backend_is_not_an_end_to_end_execution(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path, compile_only=True)
    assert (backend.is_e2e_execution, backend.compile_only, backend.validate_only) == (False, True, False)
    assert cstorch.use_cs() is True


def test_on_cpu_use_cs_is_false_and_the_factories_follow_the_backends_device(tmp_path):
    backend = cstorch.backend(cstorch.BackendType.CPU, artifact_dir=str(tmp_path / "out"))
    assert cstorch.use_cs() is False and backend.backend_type is cstorch.BackendType.CPU
    assert backend.backend_type.is_cpu and not backend.backend_type.is_csx
    assert cstorch.current_torch_device() == torch.device("cpu") and cstorch.current_backend_impl() is backend
    with backend.device:
        assert cstorch.zeros((2,)).device == backend.torch_device
    with torch.device("meta"):  # not CSX: exactly torch's, default device included
        assert cstorch.zeros((2,)).device.type == "meta"
        assert cstorch.ones_like(torch.ones(2, device="cpu")).device.type == "cpu"  # the other's device


def test_backend_type_and_get_backend_args():
    BackendType = cstorch.BackendType
    assert [m.name for m in BackendType] == ["CPU", "GPU", "CSX", "WSE"]
    assert BackendType.WSE.is_csx and BackendType.CSX.is_csx and BackendType.GPU.is_gpu
    assert BackendType.from_str(" csx ") is BackendType.CSX
    with pytest.raises(errors.InvalidArgument) as exc:
        BackendType.from_str("TPU")
    assert exc.value.message == ("Invalid Cerebras PyTorch backend type specified. Expected one of ['CPU', 'GPU', "
                                 "'CSX', 'WSE']. Got TPU.")
    with pytest.raises(errors.InvalidArgument, match="Expected backend_type to be of type BackendType"):
        cstorch.backend(3)
    csx_args = cstorch.get_backend_args("CSX")
    assert list(csx_args)[:7] == ["self", "backend_type", "artifact_dir", "compile_dir", "compile_only",
                                  "validate_only", "cluster_config"]
    assert csx_args["compile_only"].default is False and csx_args["artifact_dir"].default is None
    assert cstorch.get_backend_args(BackendType.WSE) == csx_args
    assert list(cstorch.get_backend_args("cpu"))[:3] == ["self", "backend_type", "artifact_dir"]
    assert "enable_distributed" in cstorch.get_backend_args("GPU")
    with pytest.raises(errors.InvalidArgument, match="Got TPU"):
        cstorch.get_backend_args("TPU")
    # a script's settings filtered by them, as scripts do, make a backend
    settings = {"artifact_dir": None, "compile_only": True, "num_epochs": 3}
    kept = {k: v for k, v in settings.items() if k in cstorch.get_backend_args("CPU")}
    assert kept == {"artifact_dir": None}


def test_to_numpy_and_from_numpy_share_memory_and_carry_bfloat16_bit_for_bit():
    for dtype in (torch.float32, torch.float16, torch.int64, torch.bool, torch.uint8):
        tensor = torch.arange(6).reshape(2, 3).to(dtype)
        array = cstorch.to_numpy(tensor)
        assert np.array_equal(array, tensor.numpy()) and array.dtype == tensor.numpy().dtype
        back = cstorch.from_numpy(array)
        assert back.dtype == dtype and torch.equal(back, tensor)
    array = np.zeros(3, dtype=np.float32)
    shared = cstorch.from_numpy(array)
    array[1] = 5.0
    assert shared[1].item() == 5.0  # torch.from_numpy's sharing
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    assert torch.equal(cstorch.from_numpy(frozen), torch.arange(3.0, dtype=torch.float64))  # copied, no warning

    bits = torch.tensor([0, 1, 0x7F80, 0xFF80, 0x7FC1, 0x3F80, 0x8001, 0x4049], dtype=torch.int32).to(torch.int16)
    bf16 = bits.view(torch.bfloat16)  # 0, the smallest subnormal, ±inf, a NaN, 1, -subnormal, ~3.14
    array = cstorch.to_numpy(bf16)
    assert array.dtype == np.int16 and cstorch.utils.data.arrays.is_bf16(array)
    assert np.array_equal(array, bits.numpy())
    back = cstorch.from_numpy(array)
    assert back.dtype == torch.bfloat16 and torch.equal(back.view(torch.int16), bits)
    assert cstorch.utils.data.arrays.is_bf16(array[2:]) and torch.equal(cstorch.from_numpy(array[2:]).view(torch.int16), bits[2:])
    plain = array.astype(np.int16)  # numpy drops the marking here: the bit patterns read as integers
    assert not cstorch.utils.data.arrays.is_bf16(plain) and cstorch.from_numpy(plain).dtype == torch.int16

    with pytest.raises(errors.InvalidArgument, match="from_numpy expects a numpy array, got list"):
        cstorch.from_numpy([1, 2])
    with pytest.raises(errors.InvalidArgument, match="to_numpy expects a torch.Tensor"):
        cstorch.to_numpy(np.zeros(2))
    with pytest.raises(RuntimeError, match="requires grad"):  # torch's own refusal
        cstorch.to_numpy(torch.zeros(2, requires_grad=True))


def _synthetic_input(batch_size: int = 32):
    g = torch.Generator().manual_seed(3)
    features = torch.randn(64, 8, generator=g)
    dataset = cstorch.SyntheticDataset((lambda i: features[i], lambda i: (features[i, 0] > 0).long()), num_samples=64)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, drop_last=True)


def test_synthetic_dataset_makes_samples_of_the_spec():
    template = torch.zeros(3)
    dataset = cstorch.utils.data.SyntheticDataset({"x": template, "n": [lambda i: torch.tensor(i * 2)]},
                                                  num_samples=4)
    samples = list(dataset)
    assert len(dataset) == 4 and [s["n"][0].item() for s in samples] == [0, 2, 4, 6]
    samples[0]["x"].add_(1)
    assert template.sum() == 0 and samples[1]["x"].sum() == 0  # each sample a clone of the tensor
    batches = list(torch.utils.data.DataLoader(dataset, batch_size=2))
    assert torch.equal(batches[1]["n"][0], torch.tensor([4, 6])) and batches[0]["x"].shape == (2, 3)
    endless = cstorch.SyntheticDataset(torch.ones(1))
    assert len(list(itertools.islice(endless, 50))) == 50
    with pytest.raises(TypeError, match="does not have a length because `num_samples` was not provided"):
        len(endless)
    with pytest.raises(errors.InvalidArgument, match="must be a non-empty python tree"):
        cstorch.SyntheticDataset({})
    with pytest.raises(errors.InvalidArgument, match="but got an item of type `<class 'int'>`"):
        cstorch.SyntheticDataset([torch.ones(1), 3])
    for bad in (0, -2, "4", 2.0):
        with pytest.raises(errors.InvalidArgument, match="`num_samples` must be a positive integer or None"):
            cstorch.SyntheticDataset(torch.ones(1), num_samples=bad)


def test_synthetic_data_trains_on_csx_through_the_top_level_dataloader(ws_csd, tmp_path):
    assert cstorch.DataLoader is cstorch.utils.data.DataLoader
    backend = csx(ws_csd, tmp_path)
    trainer = Trainer(backend, model)
    losses = [trainer.step(batch).item() for batch in
              cstorch.utils.data.DataExecutor(cstorch.DataLoader(_synthetic_input), num_steps=2)]
    assert len(losses) == 2 and all(np.isfinite(losses))


def test_a_script_reaches_every_name_under_the_real_packages_names(ws_csd, tmp_path):
    script = tmp_path / "names.py"
    script.write_text(textwrap.dedent("""
        import torch
        import cerebras.pytorch as cstorch
        from cerebras.pytorch import saver
        from cerebras.pytorch.saver import full, load, save
        from cerebras.pytorch.utils.data import SyntheticDataset, from_numpy, to_numpy
        from cerebras.pytorch.utils.tensorboard import SummaryReader, summarize_tensor

        assert not cstorch.use_cs() and cstorch.current_torch_device() == torch.device("cpu")
        backend = cstorch.backend("CSX", artifact_dir="out")
        assert cstorch.use_cs() and isinstance(backend, cstorch.Backend)
        assert backend.backend_type == cstorch.BackendType.CSX and "cluster_config" in cstorch.get_backend_args("CSX")
        save({"w": full((2,), 4.0)}, "w.mdl")
        assert torch.equal(saver.load("w.mdl")["w"], cstorch.ones(2) * 4)
        assert to_numpy(from_numpy(to_numpy(cstorch.zeros_like(torch.ones(2))))).sum() == 0
        assert len(SyntheticDataset(torch.ones(1), num_samples=3)) == 3 and cstorch.DataLoader and summarize_tensor
        print("names ok")
    """))
    done = subprocess.run([sys.executable, "-m", "csadmin.cstorch", str(script)], env=ws_csd.env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "names ok" in done.stdout


def test_is_cbfloat16_tensor_says_whether_a_tensor_stands_for_cb16_values():
    stand_in = torch.zeros(2, dtype=torch.float16)
    assert not cstorch.amp.is_cbfloat16_tensor(stand_in)  # float16 is float16's own dtype by default
    assert cstorch.amp.set_half_dtype("cbfloat16") is torch.float16
    assert cstorch.amp.is_cbfloat16_tensor(stand_in)
    assert not cstorch.amp.is_cbfloat16_tensor(torch.zeros(2)) and not cstorch.amp.is_cbfloat16_tensor(
        torch.zeros(2, dtype=torch.bfloat16))
    cstorch.amp.set_half_dtype("bfloat16")
    assert not cstorch.amp.is_cbfloat16_tensor(torch.zeros(2, dtype=torch.bfloat16))


def _reporting_input(batch_size: int = 4):
    """Batches whose features say, from the process that made them, is_master_ordinal() and
    get_streaming_batch_size(batch_size)."""
    said = [float(cstorch.distributed.is_master_ordinal()), float(cstorch.distributed.get_streaming_batch_size(batch_size))]
    x = torch.tensor(said * 4).repeat(2 * batch_size, 1)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, torch.zeros(2 * batch_size, dtype=torch.long)),
                                       batch_size=batch_size, drop_last=True)


def test_the_master_ordinal_and_the_streaming_batch_size(ws_csd, tmp_path):
    assert cstorch.distributed.is_master_ordinal() is True
    for bad in (0, -4, "4", True, 4.0):
        with pytest.raises(errors.InvalidArgument, match="Expected effective batch size to be a"):
            cstorch.distributed.get_streaming_batch_size(bad)
    cluster = cstorch.distributed.ClusterConfig(mgmt_address=ws_csd.connection_file, credentials_path=ws_csd.admin_key,
                                                num_workers_per_csx=2)
    backend = csx(ws_csd, tmp_path, cluster_config=cluster)
    trainer = Trainer(backend, model)
    said = []
    for x, y in cstorch.utils.data.DataExecutor(cstorch.DataLoader(_reporting_input), num_steps=2):
        said.append(x[0, :2].tolist())
        trainer.step((x, y))
    assert said == [[0.0, 4.0], [0.0, 4.0]]  # made in input workers: not the master; the whole batch to one CS-2
    assert cstorch.distributed.is_master_ordinal() is True


def test_compute_num_steps_reckons_as_the_real_package():
    compute = cstorch.utils.data.compute_num_steps
    loader = torch.utils.data.DataLoader(range(10), batch_size=2)  # 5 batches
    assert compute(loader, num_epochs=3) == 15
    assert compute(loader, num_epochs=3, steps_per_epoch=2) == 6
    assert compute(loader, num_epochs=3, grad_accum_steps=2) == 6  # 5 // 2 steps an epoch
    assert compute(loader, num_steps=7, max_steps=10, initial_step=5) == 5
    assert compute(loader, max_steps=4) == 4
    assert compute(cstorch.DataLoader(_synthetic_input), num_epochs=2) == 4  # the cstorch DataLoader's length
    endless = cstorch.SyntheticDataset(torch.ones(1))
    assert compute(endless, num_steps=9) == 9
    InvalidArgument = errors.InvalidArgument
    refusals = [
        (dict(num_epochs=1, num_steps=1), InvalidArgument, "Only one of `num_epochs` or"),
        (dict(num_steps=0), InvalidArgument, "`num_steps` must be greater than zero"),
        (dict(num_steps=2.0), InvalidArgument, "`num_steps` must be an integer, but got <class 'float'>"),
        (dict(max_steps=-1), InvalidArgument, "`max_steps` cannot be negative, but got -1"),
        (dict(), InvalidArgument, "One of num_epochs, num_steps, or max_steps must be provided"),
        (dict(num_epochs=1, steps_per_epoch=6), InvalidArgument, "steps per epoch of 6 exceeds total steps in an "
                                                                 "epoch, which is 5"),
        (dict(num_epochs=1, grad_accum_steps=6), InvalidArgument, "Gradient accumulation steps of 6 is greater"),
        (dict(max_steps=5, initial_step=5), errors.InvalidState, "Initial global step 5 already exceeds max step 5"),
    ]
    for kwargs, error, message in refusals:
        with pytest.raises(error, match=message.replace("(", r"\(")):
            compute(loader, **kwargs)
    with pytest.raises(errors.InvalidArgument, match="Specifying num_epochs for datasets with unknown length"):
        compute(endless, num_epochs=1)
    with pytest.raises(errors.InvalidArgument, match="Dataloader does not generate any batches"):
        compute([], num_steps=1)


def test_infer_batch_size_refuses_mixed_sizes_on_csx_and_warns_elsewhere(ws_csd, tmp_path):
    infer = cstorch.utils.data.infer_batch_size
    assert infer({"x": torch.zeros(4, 3), "y": [torch.zeros(4)]}) == 4 and infer(torch.tensor(2.0)) == 1
    with pytest.warns(UserWarning, match=r"non-uniform batch sizes within the same batch: \[3, 4\]"):
        assert infer((torch.zeros(4), torch.zeros(3))) is None
    with pytest.warns(UserWarning, match=r"non-uniform batch sizes between batches \(8 vs 4\)"):
        assert infer(torch.zeros(4), batch_size=8) == 4
    with pytest.raises(errors.InvalidArgument, match="could not detect any torch tensors"):
        infer({"text": "no tensor"})
    csx(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidArgument, match=r"batch with batch sizes \[3, 4\]"):
        infer((torch.zeros(4), torch.zeros(3)))
    with pytest.raises(errors.InvalidArgument, match="two different batches with batch sizes 8 and 4") as exc:
        infer(torch.zeros(4), batch_size=8)
    assert "drop_last=True" in exc.value.hint
