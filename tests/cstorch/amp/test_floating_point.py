"""The later releases' mixed-precision questions (`cstorch.amp.mixed_precision`,
`enable_mixed_precision`, `get_floating_point_dtype(_str)`): what an input pipeline or a model asks
to choose its dtype. Answered as the real package answers, in the trainer and in its input
workers; changed only outside the input function; and never a way to make the system compute in
float32 (001: it only supports mixed precision)."""

import warnings

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from tests.cstorch.helpers import model
from tests.cstorch.v2 import Trainer, csx

amp = cstorch.amp


def test_off_until_a_half_dtype_is_set_then_the_half_dtypes_answers():
    assert amp.mixed_precision() is False
    assert amp.get_floating_point_dtype() == torch.float32 and amp.get_floating_point_dtype_str() == "float32"
    assert amp.get_floating_point_dtype(torch.float64) == torch.float64
    assert amp.get_floating_point_dtype_str("float64") == "float64"
    assert amp.set_half_dtype("bfloat16") == torch.bfloat16
    assert amp.mixed_precision() is True
    assert amp.get_floating_point_dtype() == torch.bfloat16 and amp.get_floating_point_dtype_str() == "bfloat16"
    amp.set_half_dtype("cbfloat16")
    assert amp.get_floating_point_dtype() == torch.float16 and amp.get_floating_point_dtype_str() == "cbfloat16"
    assert amp.enable_mixed_precision(False) is False
    assert amp.get_floating_point_dtype() == torch.float32 and amp.get_floating_point_dtype_str() == "float32"
    assert amp.enable_mixed_precision() is True and amp.get_floating_point_dtype_str() == "cbfloat16"


def test_enable_takes_a_boolean():
    for bad in ("yes", 1, None):
        with pytest.raises(errors.InvalidArgument, match="Expected a boolean value"):
            amp.enable_mixed_precision(bad)
    assert amp.mixed_precision() is False


def test_turned_off_on_the_system_it_warns_and_the_steps_still_compute_in_half(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    amp.set_half_dtype("bfloat16")
    with pytest.warns(UserWarning, match="the system computes every compiled step in bfloat16"):
        amp.enable_mixed_precision(False)
    trainer = Trainer(backend, model)
    seen = []

    def body(batch):
        seen.append(trainer.compiled(batch[0]).dtype)
        return trainer.body(batch)

    step = cstorch.trace(body)
    for batch in cstorch.utils.data.DataExecutor(cstorch.DataLoader(_asking_input), num_steps=2):
        step(batch)
    assert seen == [torch.bfloat16]  # traced once: the system's step computed in the half dtype


def test_on_the_cpu_backend_turning_it_off_is_quiet(tmp_path):
    cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert amp.enable_mixed_precision(False) is False


def _asking_input(batch_size: int = 4):
    """Batches made in get_floating_point_dtype(), whose first feature says (as a code) what the
    process that made them answered: 1 bfloat16, 2 float16, 3 float32."""
    dtype = amp.get_floating_point_dtype()
    code = {torch.bfloat16: 1.0, torch.float16: 2.0, torch.float32: 3.0}[dtype]
    x = torch.full((2 * batch_size, 8), code).to(dtype)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, torch.zeros(2 * batch_size, dtype=torch.long)),
                                       batch_size=batch_size, drop_last=True)


def _meddling_input(batch_size: int = 4):
    amp.set_half_dtype("float16")  # inside the input function: refused in a worker
    return _asking_input(batch_size)


def _workers(ws_csd, tmp_path):
    cluster = cstorch.distributed.ClusterConfig(mgmt_address=ws_csd.connection_file,
                                                credentials_path=ws_csd.admin_key, num_workers_per_csx=2)
    return csx(ws_csd, tmp_path, cluster_config=cluster)


def test_input_workers_answer_the_trainers_dtype(ws_csd, tmp_path):
    backend = _workers(ws_csd, tmp_path)
    amp.set_half_dtype("bfloat16")
    trainer = Trainer(backend, model)
    made = []
    for x, y in cstorch.utils.data.DataExecutor(cstorch.DataLoader(_asking_input), num_steps=2):
        made.append((x.dtype, x[0, 0].item()))
        trainer.step((x.float(), y))
    assert made == [(torch.bfloat16, 1.0)] * 2


def test_changing_the_half_dtype_inside_an_input_worker_is_refused(ws_csd, tmp_path):
    backend = _workers(ws_csd, tmp_path)
    amp.set_half_dtype("bfloat16")
    trainer = Trainer(backend, model)
    with pytest.raises(errors.CsError, match="Setting half dtype in the dataloader is not allowed"):
        for x, y in cstorch.utils.data.DataExecutor(cstorch.DataLoader(_meddling_input), num_steps=2):
            trainer.step((x.float(), y))
