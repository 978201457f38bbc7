"""`cstorch.utils.data.SyntheticDataset` (also `cstorch.SyntheticDataset`): samples made from a
specification, for compiling and validating a model without its real data.

    dataset = cstorch.utils.data.SyntheticDataset(
        {"input_ids": torch.zeros(128, dtype=torch.int32),          # a tensor: cloned for each sample
         "labels": lambda i: torch.tensor(i % 10)},                 # a callable: called with the index
        num_samples=1000)                                           # None: samples without end
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, drop_last=True)

The specification is any nesting of lists, tuples, dicts, OrderedDicts and namedtuples (what
torch's pytree flattens) whose leaves are tensors or callables; each sample has its structure.
It is an iterable dataset: `len()` is `num_samples`, and a TypeError, as torch expects of an
iterable of unknown length, when that is None. The real one is a torch IterDataPipe; torch's
DataLoader pickles an IterDataPipe's contents to walk its graph, which fails on a lambda in the
specification unless `dill` is installed (the real package depends on it; this one does not), so
this is the IterableDataset IterDataPipe derives from: the same iteration, lambdas welcome.
"""

from __future__ import annotations

from torch.utils._pytree import SUPPORTED_NODES, tree_flatten, tree_unflatten
import torch
from torch.utils.data import IterableDataset

from csadmin.errors import InvalidArgument


class SyntheticDataset(IterableDataset):
    """Samples shaped like `sample_spec`, `num_samples` of them (None: without end)."""

    def __init__(self, sample_spec, num_samples=None):
        super().__init__()
        self._leaves, self._structure = tree_flatten(sample_spec)
        if not self._leaves:
            raise InvalidArgument("`sample_spec` must be a non-empty python tree of `torch.Tensor` or `Callable`.",
                                  hint="Give at least one tensor (cloned for each sample) or callable (called with "
                                       "the sample's index).")
        for leaf in self._leaves:
            if not (isinstance(leaf, torch.Tensor) or callable(leaf)):
                containers = ", ".join(getattr(t, "__name__", str(t)) for t in SUPPORTED_NODES)
                raise InvalidArgument(f"`sample_spec` is expected to contain a python tree of `torch.Tensor`, or "
                                      f"`Callable`, but got an item of type `{type(leaf)}`.",
                                      hint=f"Hold the leaves in one of: {containers}.")
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples <= 0):
            raise InvalidArgument(f"`num_samples` must be a positive integer or None, but got `{num_samples!r}`.",
                                  hint="None makes samples without end.")
        self._num_samples = num_samples

    def __iter__(self):
        index = 0
        while self._num_samples is None or index < self._num_samples:
            flat = [leaf.clone() if isinstance(leaf, torch.Tensor) else leaf(index) for leaf in self._leaves]
            yield tree_unflatten(flat, self._structure)
            index += 1

    def __len__(self) -> int:
        if self._num_samples is None:
            raise TypeError(f"`{type(self).__name__}` does not have a length because `num_samples` was not provided.")
        return self._num_samples
