"""The later releases' top-level names a script touches, against a real csd where the backend
matters: use_cs / current_torch_device / current_backend_impl / get_backend_args, Backend and
BackendType, the one-value tensor factories, amp.is_cbfloat16_tensor, distributed's master
ordinal and streaming batch size, and all of them (the data ones of data/test_data_utils.py too)
reached by a script under the real package's names — before a backend exists, on CSX and on CPU."""

import subprocess
import sys
import textwrap

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import model
from tests.cstorch.v2 import Trainer, csx, synthetic_input

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
    assert process_backend.current().backend_type is None
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
    for batch in cstorch.utils.data.DataExecutor(cstorch.DataLoader(synthetic_input), num_steps=2):
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
    with pytest.raises(errors.InvalidState, match=r"cstorch.Backend\(...\) is not constructed directly") as exc:
        cstorch.Backend(BackendType.CPU, artifact_dir="out")
    assert 'cstorch.backend("CSX" | "CPU" | "GPU", ...)' in exc.value.hint
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
