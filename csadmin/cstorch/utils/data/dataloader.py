"""cstorch.utils.data.DataLoader: the run's batches from a user's input function (004,
"Initializing the DataLoader"), in this process or in num_workers_per_csx input worker processes.

    dataloader = cstorch.utils.data.DataLoader(input_fn, params, num_steps=1000, initial_step=step)
    for epoch in range(dataloader.num_epochs):      # the real runner's loop; with num_steps: one epoch
        for batch in dataloader:                    # one iteration is one epoch
            ...

`input_fn(*args, **kwargs)` (every argument not the DataLoader's own is passed to it) returns a
torch.utils.data.DataLoader or any iterable of batches. How many steps, and how they fall into
epochs, is _utils/step_plan.py: `num_steps` (the input restarts when it runs out) or `num_epochs`
[`steps_per_epoch`] (each epoch a fresh pass over the input), capped by `max_steps`, the run's
last global step. `initial_step` resumes a run: its step count starts there (checkpoint steps and
the last step are global steps) and the data continues from it (that many batches of the input
are skipped, modulo its length; input workers restart theirs).

Its attributes follow torch.utils.data.DataLoader's: `dataset` and `batch_size` are the input
function's loader's (known before the first batch; the batch size is the first batch's once one
is drawn), `num_workers` is how many processes load the batches (the input workers, or the
input's own torch workers), `len()` is the batches one iteration yields (steps_per_epoch). The
computed counts `num_steps` (the total), `num_epochs` and `steps_per_epoch` are numbers whenever
the input's length or a count makes them so.

With `num_workers_per_csx` = N > 1 (cstorch.configure), N worker processes each call
`input_fn(*args, **kwargs)` (sharding with `worker_info()`), restarting their input when it runs
out, and the batches come from them in turn (_utils/pool.py); the step count must then be given.
The input-loading state that spans epochs (the input workers, the batches taken, the first
batch's shape) is the DataLoader's; an iteration's position is its iterator's (epoch.py).

Steps are steps executed: an iteration feeds what the run has left, so a batch drawn outside a
step (`next(iter(dataloader))` before the loop) is no step. Batch sizes: _utils/batch_shape.py.
The later releases' `DataLoader(input_fn, *args, **kwargs)` is this class: a DataExecutor asks it
for its run's batches (`batches_for`), the input restarted as needed; iterated outside one, it is
one pass over the input, fed to no run. `state_dict()` / `load_state_dict()`: input_state.py.
"""

from __future__ import annotations

import itertools

from csadmin.errors import InvalidArgument

from ...backend import process_backend
from ...checks import plain_value, whole
from ._utils.batch_shape import BatchShape
from ._utils.batches import EMPTY, EMPTY_HINT, repeated
from ._utils.pool import WorkerPool
from ._utils.roles import InputTaken
from ._utils.step_plan import step_plan
from .epoch import Epoch
from .input_state import StatefulInput

class DataLoader(StatefulInput):
    """See the module docstring. `id` numbers the process's DataLoaders from 1 in the order they
    are made (ModelZoo names its validation runs by it)."""

    _ids = itertools.count(1)

    def __init__(self, input_fn, *args, num_steps=None, max_steps=None, num_epochs=None, steps_per_epoch=None,
                 initial_step=0, **kwargs):
        if not callable(input_fn):
            raise InvalidArgument(f"DataLoader: input_fn must be a function returning a dataloader; got "
                                  f"a {type(input_fn).__name__}.")
        backend = process_backend.current()
        if backend.input_role is not None:  # this process only runs the input function (roles.py)
            raise InputTaken(input_fn, args, kwargs)
        given = dict(num_steps=num_steps, max_steps=max_steps, num_epochs=num_epochs, steps_per_epoch=steps_per_epoch)
        for name, value in given.items():
            if value is not None:
                whole("DataLoader", name, value, 1)
        self.initial_step = whole("DataLoader", "initial_step", initial_step, 0)
        self.id = next(DataLoader._ids)
        self.input_fn, self.args, self.kwargs = input_fn, args, kwargs
        self.max_steps = max_steps
        self._given = given
        config = backend.config
        self.fed_by_workers = config is not None and config.fed_by_workers
        self._workers = 1 if config is None else config.num_workers_per_csx
        self._rendezvous = None if config is None else config.workers_rendezvous
        self._input = None  # the input function's loader in this process (never made with workers, unless asked)
        length = None
        if not self.fed_by_workers or backend.executor_required:  # (a DataExecutor's num_steps defaults to len())
            self._input = self._make_input()
            length = _length(self._input)
            if length == 0:
                raise InvalidArgument(f"DataLoader: {EMPTY}", hint=EMPTY_HINT)
        plan = step_plan(length, num_steps, max_steps, num_epochs, steps_per_epoch, self.initial_step)
        counted = plan.total is not None and (num_epochs is None or steps_per_epoch is not None)
        if self.fed_by_workers and not counted and not backend.executor_required:  # a DataExecutor counts them
            raise InvalidArgument(
                f"DataLoader: with num_workers_per_csx={self._workers}, give num_steps (or num_epochs with "
                "steps_per_epoch, or max_steps): each worker's input restarts when it runs out, so only the "
                "step count ends the run.")
        self.num_steps, self.num_epochs, self.steps_per_epoch = plan
        self._explicit_epochs = num_epochs is not None  # each epoch is one pass over the input
        self._shape = BatchShape()  # the first batch's sizes, which every batch must keep
        self._taken = 0  # batches handed to the run, over every epoch
        self._epochs_begun = 0
        self._start: int | None = None  # the run's step when this DataLoader began feeding it
        self._completed = 0  # batches of its iterations that ran to their end
        self._epoch: Epoch | None = None  # its latest iteration
        self._pool: WorkerPool | None = None
        backend.announce(self)  # the model directory's yaml describes it

    def _make_input(self):
        loader = self.input_fn(*self.args, **self.kwargs)
        if not hasattr(loader, "__iter__"):
            raise InvalidArgument(f"DataLoader: input_fn returned a {type(loader).__name__}, not an iterable "
                                  "of batches (e.g. a torch.utils.data.DataLoader).")
        self._check_input(loader)
        return loader

    def _local_input(self):
        """The input function's loader in this process (with input workers: made when first asked,
        as the real system's user node makes one to know the input)."""
        if self._input is None:
            self._input = self._make_input()
        return self._input

    @property
    def dataloader(self):
        """The loader the input function returned, in this process (the real package's name for
        it: ModelZoo checks whether it is restartable)."""
        return self._local_input()

    # -- torch.utils.data.DataLoader's attributes -------------------------------------------------

    @property
    def dataset(self):
        """The input function's loader's dataset."""
        loader = self._local_input()
        try:
            return loader.dataset
        except AttributeError:
            raise AttributeError(f"DataLoader.dataset: the input function returned a {type(loader).__name__}, "
                                 "which has no dataset (return a torch.utils.data.DataLoader).") from None

    @property
    def batch_size(self) -> int | None:
        """The first batch's size once one was drawn; before, the input function's loader's."""
        if self._shape.sizes is not None:
            return next((size for size in self._shape.sizes if size is not None), None)
        size = getattr(self._local_input(), "batch_size", None)
        return size if isinstance(size, int) and not isinstance(size, bool) else None

    @property
    def num_workers(self) -> int:
        """Processes loading the batches: the input workers, else the input's own torch workers."""
        if self.fed_by_workers:
            return self._workers
        return getattr(self._input, "num_workers", 0) or 0

    def __len__(self) -> int:
        if self.steps_per_epoch is None:
            raise TypeError("This DataLoader's length is unknown: its input has no length and no step count was given.")
        return self.steps_per_epoch

    def __iter__(self):
        backend = process_backend.current()
        if backend.executor_required:  # 2.x: a DataExecutor draws its run's batches (batches_for)
            return self._outside_run()
        leftover = self._epoch.unfed() if self.fed_by_workers and self._epoch is not None else []
        self._epoch = Epoch(self, backend.run, *self._begin_epoch(backend.run), leftover)
        return self._epoch

    def _outside_run(self):
        """2.x's `iter(dataloader)` outside a DataExecutor, as the real one: one pass over the
        input, each batch's shape checked, none fed to a run."""
        for index, batch in enumerate(self._local_input()):
            self._shape.check(batch, index, process_backend.current().kind)
            yield batch

    def batches_for(self, run, count: int):
        """`count` batches for `run` (a DataExecutor's), the input restarted as needed (with input
        workers: a pool of its own, which the run finishes before it closes). The workers are the
        configuration's now (a DataExecutor's cluster config may have set them)."""
        config = process_backend.current().config
        if config is not None and config.fed_by_workers:
            if self._pool is None or self._pool.run is not run:  # (the last run's workers ended with it)
                if self._pool is not None and config.workers_rendezvous is not None:
                    raise InvalidArgument(
                        "DataLoader: its input workers are the Slurm tasks of a csrun_wse job, which feed one run; "
                        "this is a second DataExecutor's run.",
                        hint="Give each DataExecutor its own process (its own csrun_wse job), or run it with "
                             "forked input workers (num_workers_per_csx without csrun_wse).")
                self._pool = WorkerPool(self.input_fn, self.args, self.kwargs, config.num_workers_per_csx, config,
                                        run, config.workers_rendezvous, restart=self._worker_plan(run, count))
            source = _from_pool(self._pool)
        else:
            self._resume_in_process(run)
            source = repeated(self._local_input())
        for _ in range(count):
            try:
                batch = next(source)
                self._took(batch)
            except BaseException:
                if self._pool is not None:
                    self._pool.shutdown()  # a refused batch, a failed worker, Ctrl-C: the workers end now
                raise
            yield batch

    def settings(self) -> dict:
        """What the run's yaml says of the input: the counts given and computed, the batch size
        (once known), the workers, and the input function with its plain arguments."""
        given = {k: plain_value(v) for k, v in self.kwargs.items()}
        known = self._input is not None or self._shape.sizes is not None
        return {"input_fn": getattr(self.input_fn, "__qualname__", repr(self.input_fn)),
                "input_fn_kwargs": {k: v for k, v in given.items() if v is not None},
                **self._given, "initial_step": self.initial_step, "total_steps": self.num_steps,
                "epochs": self.num_epochs, "batch_size": self.batch_size if known else None,
                "num_workers_per_csx": self._workers}

    # -- what the iterator draws on (spans epochs) ------------------------------------------------------

    def _begin_epoch(self, run):
        """The next epoch's batches (an iterator), how many it feeds (None: until the input ends)
        and whether they are the step plan's last. The first tells the run its step numbering;
        each, where its last step will be, counted from the steps the run has executed."""
        if self._start is None:  # the first iteration: the run's step when this DataLoader began feeding it
            if run.program is None and run.step == run.first_step:
                run.first_step = run.step = self.initial_step  # a resumed run counts on from its checkpoint
            self._start = run.step
        # Fed: the steps executed, or the batches of iterations that ran to their end (a loop
        # without steps) — never a batch a script inspects before its loop (`next(iter(dataloader))`).
        done = max(run.step - self._start, self._completed)
        left = None if self.num_steps is None else self.num_steps - done
        run.expect_steps(left)
        count = left if self.steps_per_epoch is None else min(self.steps_per_epoch, left)
        first = done == 0  # until the run steps, every iteration starts where initial_step says
        self._epochs_begun += 1
        if self.fed_by_workers:
            if self._pool is None:
                self._pool = WorkerPool(self.input_fn, self.args, self.kwargs, self._workers, process_backend.current().config,
                                        run, self._rendezvous)
            return _from_pool(self._pool), count, count == left
        skip = 0
        if first and self.initial_step:  # the data continues where the checkpointed run left it
            length = _length(self._input)
            skip = self.initial_step % length if length else self.initial_step
        if self.num_steps is None:
            return iter(self._input), count, False  # one pass over an input of unknown length
        if self._explicit_epochs and not skip:
            return self._one_pass(self._epochs_begun), count, count == left
        return itertools.islice(repeated(self._input), skip, None), count, count == left

    def _one_pass(self, epoch: int):
        """One pass over the input, of steps_per_epoch batches: the iterator asks for no more than
        the epoch feeds, so a pass that ends before it is shorter than steps_per_epoch."""
        taken = 0
        for batch in itertools.islice(self._input, self.steps_per_epoch):
            taken += 1
            yield batch
        if taken < self.steps_per_epoch:
            raise InvalidArgument(f"DataLoader: epoch {epoch} ended after {taken} batches; steps_per_epoch "
                                  f"is {self.steps_per_epoch}.", hint="Lower steps_per_epoch to what the input yields.")

    def _took(self, batch) -> None:
        """Count a batch handed to a run, after checking its shape."""
        self._shape.check(batch, self._taken, process_backend.current().kind)
        self._taken += 1
        self._count_fed(batch)

    def _ended(self) -> None:
        """The iteration feeding the step plan's last steps ended: the input workers stream what
        was consumed and leave."""
        if self._pool is not None:
            self._pool.finish()


def _from_pool(pool: WorkerPool):
    while True:
        yield pool.next_batch()[1]


def _length(loader) -> int | None:
    try:
        return len(loader)
    except TypeError:
        return None
