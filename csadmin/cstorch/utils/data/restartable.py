"""The restartable-input protocol of the later releases: what a user's dataloader implements so
that `cstorch.utils.data.DataLoader.state_dict()` can save where the input is and
`load_state_dict()` can resume it there, and what each input worker knows of its own streaming.

    class MyLoader(torch.utils.data.DataLoader):         # what input_fn returns
        def state_dict(self):                             # per input worker, at a checkpoint step
            worker = cstorch.distributed.get_worker_state()   # a DataLoaderCheckpoint
            return {"samples_streamed": worker.samples_streamed}
        def aggregate_state_dict(self, worker_states):    # the workers' states (in worker order) -> one
            return {"samples_streamed": sum(s["samples_streamed"] for s in worker_states)}
        def deaggregate_state_dict(self, aggregated_state_dict, strict=True):   # one -> this worker's
            return aggregated_state_dict
        def load_state_dict(self, state_dict, strict=True):  # resume there
            ...

`RestartableDataLoader` is a runtime-checkable Protocol: an object is one when it has the four
methods (isinstance looks at their names only, as the real protocol's check does). `strict` is
optional, but `load_state_dict` and `deaggregate_state_dict` must agree on it: both take it or
neither does (`load_kwargs` refuses anything else), and it is passed to both when they take it.

`DataLoaderCheckpoint` is what `cstorch.distributed.get_worker_state()` returns inside the user's
`state_dict`: which worker, and what it streamed *in this run* (the counters start at 0 in every
run, a resumed one too). get_worker_state answers once per `state_dict` call, and only there:
`offered(checkpoint)` makes the checkpoint available for the duration of that call. Stdlib only.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Dict, List, Protocol, runtime_checkable

from csadmin.errors import InvalidArgument

from ...backend import process_backend


@runtime_checkable
class RestartableDataLoader(Protocol):
    """A dataloader whose position can be saved in a checkpoint and restored (see the module
    docstring): the input function returns one to make its cstorch DataLoader restartable."""

    def state_dict(self) -> Dict[str, Any]:
        """This input worker's state at a checkpoint step (call get_worker_state() here)."""

    def load_state_dict(self, state_dict: Dict[str, Any], strict: bool = True) -> None:
        """Resume this worker at `state_dict` (what deaggregate_state_dict gave it)."""

    def aggregate_state_dict(self, worker_states: List[Dict[str, Any]]) -> Dict[str, Any]:
        """The one state saved in the checkpoint, from every worker's (in worker order)."""

    def deaggregate_state_dict(self, aggregated_state_dict: Dict[str, Any], strict: bool = True) -> Dict[str, Any]:
        """This worker's state, from the checkpoint's."""


@dataclass
class DataLoaderCheckpoint:
    """An input worker's streaming at a checkpoint step, in this run. `appliance_step` is the
    run's step; `worker_step` how many batches this worker had produced for the run by then (the
    run's batches come from the workers in turn, so it is `appliance_step` with one worker);
    `samples_streamed` the samples in those batches. `user_state_dict` is what the dataloader's
    state_dict returned (None while it runs)."""

    local_worker_id: int
    num_workers_per_csx: int
    num_csx: int
    wse_id: int
    appliance_step: int
    worker_step: int
    samples_streamed: int
    user_state_dict: Dict[str, Any]

    @property
    def global_worker_id(self) -> int:
        """This worker's index among the workers of every CS-X (those of CS-X 0 first)."""
        return self.wse_id * self.num_workers_per_csx + self.local_worker_id

    @property
    def total_num_workers(self) -> int:
        """The run's input workers, over every CS-X."""
        return self.num_workers_per_csx * self.num_csx


def is_restartable(loader) -> bool:
    return isinstance(loader, RestartableDataLoader)


def load_kwargs(loader, strict: bool = True) -> dict:
    """The keywords load_state_dict and deaggregate_state_dict are called with: `strict` when
    both take it, none when neither does; InvalidArgument when only one does."""
    takes = ["strict" in inspect.signature(method).parameters
             for method in (loader.load_state_dict, loader.deaggregate_state_dict)]
    if any(takes) and not all(takes):
        raise InvalidArgument(
            f"DataLoader: the input function's {type(loader).__name__} takes `strict` in only one of "
            "load_state_dict and deaggregate_state_dict: either both or none of them should have the `strict` "
            "keyword in their signature.",
            hint="Give both methods `strict: bool = True`, or neither.")
    return {"strict": strict} if all(takes) else {}


def load_into(loader, aggregated_state_dict, kwargs: dict) -> None:
    """Resume `loader` at its share of a saved state: deaggregate, then load."""
    loader.load_state_dict(loader.deaggregate_state_dict(aggregated_state_dict, **kwargs), **kwargs)


@contextlib.contextmanager
def offered(checkpoint: DataLoaderCheckpoint):
    """get_worker_state() answers `checkpoint` (once) while the body runs, and never after."""
    backend = process_backend.current()
    backend.worker_state = checkpoint
    try:
        yield
    finally:
        backend.worker_state = None


def worker_state_dict(loader, checkpoint: DataLoaderCheckpoint):
    """The user's state_dict() of `loader`, with `checkpoint` offered to get_worker_state."""
    with offered(checkpoint):
        return loader.state_dict()
