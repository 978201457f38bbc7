"""The later releases' GPU backend: the same 2.x script, the math on the CUDA device, no system.

    python -m pytest tests/cstorch/backend/test_gpu_backend.py -v

Needs no csd. On a machine without CUDA the GPU runs are skipped (saying so) and only the refusal
is checked: `cstorch.backend("GPU")` without CUDA says so, as the real package does.
"""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from tests.cstorch.helpers import model
from tests.cstorch.v2 import Trainer, train_saving_checkpoints

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine: the GPU "
                                "backend runs where torch.cuda.is_available()")


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is present: the refusal cannot happen here")
def test_a_gpu_backend_without_cuda_is_refused(tmp_path):
    with pytest.raises(errors.InvalidState) as exc:
        cstorch.backend("GPU", artifact_dir=str(tmp_path))
    assert exc.value.message == "GPU was specified as the target device, but CUDA is not available."
    assert "cstorch.backend(\"CPU\")" in exc.value.hint


@needs_cuda
def test_a_gpu_backend_trains_on_the_cuda_device_without_a_system(tmp_path, capsys):
    backend = cstorch.backend("GPU", artifact_dir=str(tmp_path / "out"))
    assert "cstorch: backend GPU: the steps run eagerly with PyTorch on the CUDA device" in capsys.readouterr().err
    assert backend.is_gpu and not backend.is_csx and str(backend.device) == "cuda"
    t = Trainer(backend, model)
    assert all(p.device.type == "cuda" for p in t.net.parameters())  # built under backend.device
    seen, dtypes = [], []

    def body(batch):
        inputs, targets = batch
        assert inputs.device.type == "cuda"  # the executor moved the batch
        dtypes.append(t.compiled(inputs).dtype)  # under autocast to the half dtype
        return t.body(batch)

    step_fn = cstorch.trace(body)

    @cstorch.step_closure
    def record(loss):
        seen.append((loss.device.type, loss.item()))

    saved = train_saving_checkpoints(t, step_fn, tmp_path, num_steps=30, checkpoint_steps=10, each=record)
    assert saved == [10, 20, 30] and dtypes[0] == torch.float16
    assert {device for device, _ in seen} == {"cpu"}  # step closures get the values on the host
    losses = [loss for _, loss in seen]
    assert sum(losses[-5:]) < sum(losses[:5]) / 2, losses
    restored = cstorch.load(str(tmp_path / "c30.mdl"))
    for name, tensor in t.net.state_dict().items():
        assert torch.equal(restored["model"][name], tensor.cpu())
