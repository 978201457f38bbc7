"""The later releases' data helpers a script touches: from_numpy / to_numpy (bfloat16 bit for
bit), SyntheticDataset, the top-level DataLoader, compute_num_steps and infer_batch_size — pure
where they can be, against a real csd where the backend decides (CSX refuses what CPU warns of)."""

import itertools

import numpy as np
import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from tests.cstorch.helpers import model
from tests.cstorch.v2 import Trainer, csx, synthetic_input


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
              cstorch.utils.data.DataExecutor(cstorch.DataLoader(synthetic_input), num_steps=2)]
    assert len(losses) == 2 and all(np.isfinite(losses))


def test_compute_num_steps_reckons_as_the_real_package():
    compute = cstorch.utils.data.compute_num_steps
    loader = torch.utils.data.DataLoader(range(10), batch_size=2)  # 5 batches
    assert compute(loader, num_epochs=3) == 15
    assert compute(loader, num_epochs=3, steps_per_epoch=2) == 6
    assert compute(loader, num_epochs=3, grad_accum_steps=2) == 6  # 5 // 2 steps an epoch
    assert compute(loader, num_steps=7, max_steps=10, initial_step=5) == 5
    assert compute(loader, max_steps=4) == 4
    assert compute(cstorch.DataLoader(synthetic_input), num_epochs=2) == 4  # the cstorch DataLoader's length
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
    with pytest.warns(UserWarning, match=r"non-uniform batch sizes within the same batch: \{3, 4\}"):
        assert infer((torch.zeros(4), torch.zeros(3))) is None
    with pytest.warns(UserWarning, match=r"non-uniform batch sizes between batches \(8 vs 4\)"):
        assert infer(torch.zeros(4), batch_size=8) == 4
    with pytest.raises(errors.InvalidArgument, match="could not detect any torch tensors"):
        infer({"text": "no tensor"})
    csx(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidState, match=r"batch with batch sizes \{3, 4\}"):  # the real one's RuntimeError
        infer((torch.zeros(4), torch.zeros(3)))
    with pytest.raises(errors.InvalidState, match="two different batches with batch sizes 8 and 4") as exc:
        infer(torch.zeros(4), batch_size=8)
    assert "drop_last=True" in exc.value.hint
