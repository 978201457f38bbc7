"""cstorch.utils.data.DistributedSampler and its parts, as ModelZoo's HDF5 map datasets sample
with them: the real package's orders (taken from its 2.10 wheel for these seeds), skipping ahead,
carrying and padding the last batch, the share of each input worker, and CSX's refusals."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.utils.data.sampler import BatchSampler, ShardedSampler, ShuffleSampler, pad_index
from csadmin.cstorch.utils.data.worker_info import WorkerInfo
from csadmin.errors import InvalidArgument
from tests.cstorch.run_state import fresh_run  # noqa: F401


def test_the_shuffled_orders_are_the_real_packages():
    sampler = ShuffleSampler(list(range(10)), num_samples=14, shuffle=True, seed=3)
    assert list(sampler) == [7, 6, 5, 4, 7, 2, 0, 3, 8, 9, 6, 1, 0, 3]  # epoch 0: seed 3
    assert list(sampler) == [7, 6, 0, 1, 0, 9, 3, 9, 5, 8, 2, 4, 4, 6]  # epoch 1: seed 4
    assert list(ShuffleSampler(list(range(10)), shuffle=True, seed=3, start_index=13)) == [6, 7, 3, 2, 8, 1, 5]


def test_drop_last_carries_the_incomplete_batch_into_the_next_epoch():
    batches = BatchSampler(ShuffleSampler(list(range(10)), shuffle=False), 4, True, False)
    assert list(batches) == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert list(batches) == [[8, 9, 0, 1], [2, 3, 4, 5], [6, 7, 8, 9]]


def test_pad_last_pads_with_the_placeholder_and_set_state_skips_ahead():
    padded = list(BatchSampler(ShuffleSampler(list(range(6)), shuffle=False), 4, False, True))
    assert padded[0] == [0, 1, 2, 3] and padded[1][:2] == [4, 5] and padded[1][2:] == [pad_index, pad_index]
    sampler = cstorch.utils.data.DistributedSampler(list(range(10)), shuffle=False, batch_size=2)
    sampler.set_state(4)
    assert len(sampler) == 3 and list(sampler) == [[4, 5], [6, 7], [8, 9]]
    assert len(sampler) == 5  # the next epoch is whole


def test_an_input_worker_takes_every_nth_global_batch(fresh_run):
    fresh_run.is_input_worker, fresh_run.worker = True, WorkerInfo(1, 3)
    share = ShardedSampler([[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]])
    assert len(share) == 2 and list(share) == [[2, 3], [8, 9]]
    fresh_run.is_input_worker = False
    assert len(list(ShardedSampler([[0, 1], [2, 3]]))) == 2  # the script's own process: every batch


def test_csx_needs_uniform_batches_and_a_global_batch_size():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("csadmin.cstorch.utils.data.sampler.use_cs", lambda: True)
        with pytest.raises(InvalidArgument, match="Running on CSX requires all batches to have the same batch size"):
            cstorch.utils.data.DistributedSampler(list(range(8)), seed=0, batch_size=4, drop_last=False)
        with pytest.raises(InvalidArgument, match="batch_size is None and shard is enabled"):
            cstorch.utils.data.DistributedSampler(list(range(8)), seed=0)


@pytest.mark.parametrize("kwargs, message", [
    (dict(shuffle=True), "A shuffling sampler needs a seed"),
    (dict(shuffle=False, batch_size=0), "batch_size should be a positive integer value, but got batch_size=0"),
    (dict(shuffle=False, num_samples=0), "num_samples should be a positive integer value"),
])
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        cstorch.utils.data.DistributedSampler(list(range(8)), **kwargs)


def test_a_torch_dataloader_batches_with_it():
    data = torch.arange(12).float()
    sampler = cstorch.utils.data.DistributedSampler(data, seed=5, batch_size=4)
    loader = torch.utils.data.DataLoader(data, batch_sampler=sampler)
    seen = torch.cat(list(loader))
    assert sorted(seen.tolist()) == list(range(12)) and not torch.equal(seen, data)
