"""cstorch.utils.data.DataLoader: the run's batches from a user's input function (004,
"Initializing the DataLoader"), in this process or in num_workers_per_csx input worker processes.

    dataloader = cstorch.utils.data.DataLoader(input_fn, num_steps=1000, batch_size=32)

`input_fn(*args, **kwargs)` (every argument not the DataLoader's own is passed to it) returns a
torch.utils.data.DataLoader or any iterable of batches. How many steps, from the document's two
mutually exclusive groups:

  num_steps                    num_steps batches, the input restarted when it runs out;
                               at most max_steps if given.
  num_epochs [steps_per_epoch] num_epochs passes of steps_per_epoch batches each (default: the
                               input's length); at most max_steps if given.
  neither                      one pass over the input, at most max_steps.

With `num_workers_per_csx` = N > 1 (cstorch.configure), N worker processes each call
`input_fn(*args, **kwargs)` (sharding with `worker_info()`), restarting their input when it runs
out, and the batches come from them in turn (pool.py); the step count must then be given.

`len(dataloader)` is that total; iterating sets it as the run's last step (cstorch.current), the
step on which weights may always be fetched. Every batch must have the first batch's size (the
fabric is programmed for one batch shape): another is refused before the step runs, with the
advice to batch with drop_last=True (000, "Drop remainder to enforce fixed batch size").
"""

from __future__ import annotations

import itertools


import csadmin.cstorch.current as current
from csadmin.errors import InvalidArgument, ReprogramForbidden

from ..config import current_config, require_config
from ..optim.checks import plain_value, whole
from .input_analysis import measure_and_exit, requested as analysis_requested
from .batches import EMPTY, EMPTY_HINT, repeated, tensors
from .pool import WorkerPool
from .remote import serve_and_exit, worker_requested as remote_worker_requested
from .tasks import WorkerInfo, num_tasks, task_id, worker_info  # noqa: F401  (the API's names)

ADVICE = ("To ensure a fixed batch size across all steps, set drop_last=True when batching in the input "
          "function (torch.utils.data.DataLoader(..., drop_last=True)).")


class DataLoader:
    """See the module docstring."""

    def __init__(self, input_fn, *args, num_steps=None, max_steps=None, num_epochs=None, steps_per_epoch=None,
                 **kwargs):
        if not callable(input_fn):
            raise InvalidArgument(f"DataLoader: input_fn must be a function returning a dataloader; got "
                                  f"a {type(input_fn).__name__}.")
        if analysis_requested():  # cs_input_analyzer: measure input_fn in this process, and end it
            measure_and_exit(input_fn, args, kwargs)
        if remote_worker_requested():  # a csrun_wse input worker task: feed the trainer, and end
            serve_and_exit(input_fn, args, kwargs, require_config())
        counts = dict(num_steps=num_steps, max_steps=max_steps, num_epochs=num_epochs, steps_per_epoch=steps_per_epoch)
        for name, value in counts.items():
            if value is not None:
                whole("DataLoader", name, value, 1)
        if num_steps is not None and (num_epochs is not None or steps_per_epoch is not None):
            raise InvalidArgument("DataLoader: num_steps and num_epochs/steps_per_epoch are mutually exclusive: "
                                  "give the total number of steps, or the epochs (and steps per epoch).")
        if steps_per_epoch is not None and num_epochs is None:
            raise InvalidArgument("DataLoader: steps_per_epoch needs num_epochs.", hint="Add num_epochs=N.")
        self.input_fn = input_fn
        current.announce(self)  # the model directory's yaml describes it
        self.num_steps, self.max_steps = num_steps, max_steps
        self.num_epochs = num_epochs
        self.batch_size: int | None = None
        self._sizes: list | None = None
        config = current_config()
        self.workers = 1 if config is None else config.num_workers_per_csx
        self.rendezvous = None if config is None else config.workers_rendezvous
        self.pool = None
        self.args, self.kwargs = args, kwargs
        if config is not None and config.fed_by_workers:  # the workers call input_fn, each in its own process
            self.loader = None
            self.steps_per_epoch = steps_per_epoch
            self.total_steps = self._total()
            if self.total_steps is None or (num_epochs is not None and steps_per_epoch is None):
                raise InvalidArgument(
                    f"DataLoader: with num_workers_per_csx={self.workers}, give num_steps (or num_epochs with "
                    "steps_per_epoch, or max_steps): each worker's input restarts when it runs out, so only the "
                    "step count ends the run.")
            return
        self.loader = input_fn(*args, **kwargs)
        if not hasattr(self.loader, "__iter__"):
            raise InvalidArgument(f"DataLoader: input_fn returned a {type(self.loader).__name__}, not an iterable "
                                  "of batches (e.g. a torch.utils.data.DataLoader).")
        if self._length() == 0:
            raise InvalidArgument(f"DataLoader: {EMPTY}", hint=EMPTY_HINT)
        self.steps_per_epoch = self._steps_per_epoch(steps_per_epoch) if num_steps is None else None
        self.total_steps = self._total()

    def _steps_per_epoch(self, given):
        length = self._length()
        if given is not None and length is not None and given > length:
            raise InvalidArgument(f"DataLoader: steps_per_epoch {given} exceeds the input's length ({length} batches).",
                                  hint="Lower steps_per_epoch, or use num_steps (the input restarts when it runs out).")
        if given is None and length is None and self.num_epochs is not None:
            raise InvalidArgument("DataLoader: num_epochs needs steps_per_epoch: the input function's dataloader "
                                  "has no length.")
        return given if given is not None else length

    def _length(self):
        try:
            return len(self.loader)
        except TypeError:
            return None

    def _total(self):
        if self.num_steps is not None:
            total = self.num_steps
        elif self.steps_per_epoch is None:
            total = None  # one pass over an input of unknown length
        else:
            total = (self.num_epochs or 1) * self.steps_per_epoch
        if self.max_steps is not None:
            total = self.max_steps if total is None else min(total, self.max_steps)
        return total

    def settings(self) -> dict:
        """What the run's yaml says of the input: the step counts, the batch size (once the
        first batch is known), the workers, and the input function with its plain arguments."""
        given = {k: plain_value(v) for k, v in self.kwargs.items()}
        return {"input_fn": getattr(self.input_fn, "__qualname__", repr(self.input_fn)),
                "input_fn_kwargs": {k: v for k, v in given.items() if v is not None},
                "num_steps": self.num_steps, "max_steps": self.max_steps, "num_epochs": self.num_epochs,
                "steps_per_epoch": self.steps_per_epoch, "total_steps": self.total_steps,
                "batch_size": self.batch_size, "num_workers_per_csx": self.workers}

    def __len__(self) -> int:
        if self.total_steps is None:
            raise TypeError("This DataLoader's length is unknown: its input has no length and no step count was given.")
        return self.total_steps

    def __iter__(self):
        run = current.state()
        run.last_step = None if self.total_steps is None else run.step + self.total_steps
        if self.loader is None:  # fed by input workers
            yield from self._from_workers()
            return
        for index, batch in enumerate(itertools.islice(self._batches(), self.total_steps)):
            self._check_size(index, batch)
            yield batch

    def _from_workers(self):
        """total_steps batches from num_workers_per_csx worker processes (pool.py), each checked
        before its step; the workers end when the run closes, or when iterating stops."""
        self.pool = pool = WorkerPool(self.input_fn, self.args, self.kwargs, self.workers, require_config(),
                                      self.rendezvous)
        try:
            for index in range(self.total_steps):
                _, batch = pool.next_batch()
                self._check_size(index, batch)
                yield batch
        except GeneratorExit:  # the loop stopped early: the workers still report what they fed
            pool.finish()
            raise
        except BaseException:
            pool.shutdown()
            raise
        pool.finish()

    def _batches(self):
        """Every batch the counts allow, uncapped by max_steps (__iter__ caps, pulling no more)."""
        if self.num_steps is not None:
            yield from repeated(self.loader)
            return
        for epoch in range(self.num_epochs or 1):
            count = 0
            for batch in itertools.islice(self.loader, self.steps_per_epoch):
                count += 1
                yield batch
            if self.steps_per_epoch is not None and count < self.steps_per_epoch:
                raise InvalidArgument(f"DataLoader: epoch {epoch + 1} ended after {count} batches; steps_per_epoch "
                                      f"is {self.steps_per_epoch}.", hint="Lower steps_per_epoch to what the input yields.")

    def _check_size(self, index: int, batch) -> None:
        sizes = [t.shape[0] if t.dim() else None for t in tensors(batch)]
        if self._sizes is None:
            self._sizes = sizes
            self.batch_size = next((size for size in sizes if size is not None), None)
            return
        if sizes == self._sizes:
            return
        if len(sizes) != len(self._sizes):
            raise ReprogramForbidden(f"Batch {index + 1} holds {len(sizes)} tensors, the first batch held "
                                     f"{len(self._sizes)}: every batch must have the same structure.")
        was, now = next((a, b) for a, b in zip(self._sizes, sizes) if a != b)
        raise ReprogramForbidden(f"Inconsistent batch sizes detected: batch {index + 1} has size {now}, the first "
                                 f"batch had {was} (the fabric is programmed for one batch shape).", hint=ADVICE)
