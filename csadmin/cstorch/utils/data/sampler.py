"""`cstorch.utils.data.DistributedSampler` and its parts (the real module's): sampling a
map-style dataset for a run, with shuffling, batching, skipping ahead and sharding over the input
workers, in an order that does not depend on how many workers stream it (ModelZoo's HDF5 map
datasets use it).

    sampler = cstorch.utils.data.DistributedSampler(dataset, shuffle=True, seed=0, batch_size=32)
    loader = torch.utils.data.DataLoader(dataset, batch_sampler=sampler)

It is three samplers in a row, each the real one's: ShuffleSampler (the indices of one logical
epoch of `num_samples`, default the dataset's length: a permutation seeded by seed + epoch when
shuffling, the dataset repeated or cut to fit otherwise; `start_index` skips samples already
streamed), BatchSampler (batches of `batch_size`; with drop_last an incomplete last batch is
carried over to the next epoch's first, with pad_last it is padded with `pad_index`, a
placeholder the dataset turns into padding) and ShardedSampler (in an input worker, the global
batches whose index modulo the number of workers is this worker's, each cut to the batch size
its CS-2 takes; outside one, every batch). On CSX every batch has one size, so drop_last=False
without pad_last is refused there, as is sharding without a batch size.
"""

from __future__ import annotations

import itertools
import math
from typing import Iterable, Optional, Union

import torch

from csadmin.errors import InvalidArgument, InvalidState

from ... import distributed
from ...backend import use_cs

pad_index = object()  # the placeholder index of a padded batch's missing samples


class DistributedSampler(torch.utils.data.Sampler):
    """The real class's arguments: data_source, shuffle, seed, start_index, shard, batch_size,
    drop_last, num_samples, pad_last (see the module docstring)."""

    def __init__(self, data_source, shuffle: bool = True, seed: Optional[int] = None, start_index: int = 0,
                 shard: bool = True, batch_size: Optional[int] = None, drop_last: bool = True,
                 num_samples: Optional[int] = None, pad_last: bool = False):
        if use_cs() and not drop_last and not pad_last:
            raise InvalidArgument("Running on CSX requires all batches to have the same batch size. Setting "
                                  "`drop_last=False` and `pad_last=False` violates this condition as the last batch "
                                  "may have a smaller batch size. Please set `drop_last=True` or `pad_last=True`.")
        if use_cs() and batch_size is None and shard:
            raise InvalidArgument("Running on CSX but batch_size is None and shard is enabled. When running on CSX, "
                                  "the batch_size must be the global batch size.")
        self.sampler = ShuffleSampler(data_source, num_samples=num_samples, shuffle=shuffle, seed=seed,
                                      start_index=start_index)
        if batch_size is not None:
            self.sampler = BatchSampler(self.sampler, batch_size, drop_last, pad_last)
        if shard:
            self.sampler = ShardedSampler(self.sampler)
        self.kwargs = dict(data_source=data_source, shuffle=shuffle, seed=seed, shard=shard, batch_size=batch_size,
                           drop_last=drop_last, num_samples=num_samples, pad_last=pad_last)

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)

    def set_state(self, start_index: int) -> None:
        """Continue deterministically after `start_index` samples streamed (by every worker)."""
        self.__init__(**self.kwargs, start_index=start_index)


class ShuffleSampler(torch.utils.data.Sampler):
    """One logical epoch's indices at a time, shuffled or in order, from `start_index` on."""

    def __init__(self, data_source, num_samples: Optional[int] = None, shuffle: bool = True,
                 seed: Optional[int] = None, start_index: int = 0):
        self._data_source = data_source
        self._num_samples = num_samples
        if isinstance(self.num_samples, bool) or not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise InvalidArgument(f"num_samples should be a positive integer value, but got "
                                  f"num_samples={self.num_samples}")
        if shuffle and seed is None:
            raise InvalidArgument("A shuffling sampler needs a seed (each epoch's order is seed + epoch).",
                                  hint="Pass seed=<int> (ModelZoo: shuffle_seed), or shuffle=False.")
        self._num_samples_frozen = self.num_samples
        self.shuffle, self.seed = bool(shuffle), seed
        self.epoch = start_index // self.num_samples
        self.start_index = start_index - self.num_samples * self.epoch

    @property
    def num_samples(self) -> int:
        return len(self._data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        if self.num_samples != self._num_samples_frozen:
            raise InvalidState(f"Data source passed into Sampler must have the same length every epoch. Original "
                               f"length was {self._num_samples_frozen}, new length is {self.num_samples}")
        size = len(self._data_source)
        if self.shuffle:
            yield from self._permutation(size)[self.start_index:].tolist()
        else:
            yield from (i % size for i in range(self.start_index, self.num_samples))
        self.epoch += 1
        self.start_index = 0

    def _permutation(self, size: int) -> torch.Tensor:
        """This epoch's order: a permutation of the dataset, or of it repeated to num_samples."""
        gen = torch.Generator()
        gen.manual_seed(self.seed + self.epoch)
        if self.num_samples <= size:
            return torch.randperm(size, generator=gen)[:self.num_samples]
        repeats = math.ceil(self.num_samples / size)
        whole = torch.cat([torch.arange(size) for _ in range(repeats - 1)] + [torch.randperm(size, generator=gen)])
        whole = whole[:self.num_samples]
        return whole[torch.randperm(self.num_samples, generator=gen)]

    def __len__(self) -> int:
        return self.num_samples - self.start_index


class BatchSampler(torch.utils.data.Sampler):
    """Batches of `batch_size` indices; drop_last carries an incomplete batch into the next epoch,
    pad_last pads it with `pad_index`."""

    def __init__(self, sampler: Union[torch.utils.data.Sampler, Iterable[int]], batch_size: int, drop_last: bool,
                 pad_last: bool):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise InvalidArgument(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        for name, value in (("drop_last", drop_last), ("pad_last", pad_last)):
            if not isinstance(value, bool):
                raise InvalidArgument(f"{name} should be a boolean value, but got {name}={value}")
        self.sampler, self.batch_size, self.drop_last, self.pad_last = sampler, batch_size, drop_last, pad_last
        self.leftover_samples = []

    def __iter__(self):
        if self.drop_last:
            indices = itertools.chain(self.leftover_samples, self.sampler)
            while True:
                batch = list(itertools.islice(indices, self.batch_size))
                if len(batch) < self.batch_size:
                    self.leftover_samples = batch
                    return
                yield batch
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch:
            yield batch + [pad_index] * (self.batch_size - len(batch)) if self.pad_last else batch

    def __len__(self) -> int:
        if self.drop_last:
            return (len(self.sampler) + len(self.leftover_samples)) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


class ShardedSampler(torch.utils.data.Sampler):
    """In an input worker, its share of the global batches (see the module docstring)."""

    def __init__(self, data_source: Union[torch.utils.data.Sampler, Iterable]):
        self._data_source = data_source
        self._starting_group = 0
        streaming = distributed.is_streamer()
        self._num_groups = distributed.num_streamers() if streaming else 1
        self._group_idx = distributed.get_streaming_rank() if streaming else 0

    def __iter__(self):
        if not distributed.is_streamer():
            yield from self._data_source
            return
        index = None
        for index, batch in enumerate(self._data_source, start=self._starting_group):
            if index % self._num_groups == self._group_idx:
                yield batch[:distributed.get_streaming_batch_size(len(batch))]  # this CS-2's share: csd has one
        if index is not None:
            self._starting_group = (index + 1) % self._num_groups

    def __len__(self) -> int:
        batches = len(self._data_source)
        length = batches // self._num_groups
        position = (self._group_idx - self._starting_group) % self._num_groups
        return length + (1 if position < batches % self._num_groups else 0)
