"""`cstorch.utils.data.DataExecutor`: one run on the system, as the later releases define it.

    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=1000, checkpoint_steps=100,
                                               activation_steps=10, writer=writer)
    for step, batch in enumerate(executor, start=1):
        loss = training_step(batch)          # @cstorch.trace: captured at this run's first step
        log_loss(loss, step)                 # a step closure: runs on activation steps
        save_checkpoint(step)                # a checkpoint closure: runs on checkpoint steps

Each DataExecutor iterated is one run: its first step captures the step function as the run's
program, opens the run on csd and programs the fabric once; its last step closes the run. So a
process may run several in turn — train, then validate with another executor whose trace
captures the eval step as a new program — but never two at once: iterating one inside another's
loop is refused. A loop left early (`break`) leaves its run open until the next DataExecutor
starts (which closes it) or the process ends (which closes it as for any run, ABORTED if an
exception ended the process).

Arguments, as the real package checks them:
  * `dataloader` must be a cstorch.utils.data.DataLoader;
  * `num_steps` defaults to `len(dataloader)` (one pass; refused for an input of unknown length);
    with the backend's compile_only or validate_only it is 1, the one step compiled or validated;
  * `checkpoint_steps`: None (no checkpoint step), an integer N (every N-th step and the last), or
    a Schedule of 0-indexed steps;
  * `activation_steps` (default 1): step closures run on every activation_steps-th step and the
    last; reduced, with a warning, to divide every checkpoint step (a checkpoint closure is a step
    closure: it must be able to run there);
  * `writer`: the SummaryWriter cstorch.summarize_scalar / summarize_tensor write to;
  * `cs_config` (2.0–2.1): the cluster config, checked and applied as cstorch.backend's would be
    (csd itself must stay the backend's); `micro_batch_size`: cstorch.backends.csx's setting for
    the run; `profiler_activities` and `listeners` beyond the defaults are not simulated (refused; an empty
    list, as ModelZoo passes, asks for none and is taken).

Where its run writes (`artifact_dir`): `<backend.artifact_dir>/executors/<NNNNNN>/`, numbered in
the order the process iterates them, with `executors/latest` linking to the newest, as the real
package lays them out: `performance.json` (csd's, at the run's close), `cs_<checksum>` (the
compile directory), `<mode>/params_<mode>.yaml` and the run's TensorBoard scalars.

`cstorch.current_executor()` is the DataExecutor whose loop is running (InvalidState outside
one); `MbsSetting` is the type of the micro_batch_size argument, as the real module names it.
"""

from __future__ import annotations

import math
import os
import pathlib
import warnings
from typing import Dict, Literal, Union

from csadmin.errors import InvalidArgument, InvalidState

from ...backend import current_backend_impl, process_backend
from ...backend.backend_type import NO_BACKEND
from ...backend.config import PARAMETERS, settings
from ...distributed import ClusterConfig
from ...backend.run import Run
from ..profiler import Profiler
from ._utils.batches import samples_of
from .utils import Schedule
from .dataloader import DataLoader

NOT_A_LOADER = ("Detected that dataloader was not wrapped using a cstorch.utils.data.DataLoader: the input is "
                "streamed to the system by the Cerebras DataLoader's input function.")

# What micro_batch_size may be (cstorch.backends.csx.performance checks the value).
MbsSetting = Union[None, int, Literal["explore", "auto"], Dict[str, Dict[str, int]]]


class NotADataLoader(InvalidArgument, TypeError):
    """A DataExecutor over something not a cstorch DataLoader: INVALID_ARGUMENT, and a TypeError
    as the real DataExecutor raises."""


def _whole(name: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InvalidArgument(f"DataExecutor: expected {name} to be an integer ≥ {least} or None, got {value!r}.")
    return value


class DataExecutor:
    """One run of a DataLoader's batches on the backend (see the module docstring)."""

    def __init__(self, dataloader, num_steps=None, checkpoint_steps=None, activation_steps=None, cs_config=None,
                 writer=None, profiler_activities=None, micro_batch_size=None, listeners=None):
        backend = process_backend.current()
        if backend.config is None:
            raise InvalidState(NO_BACKEND,
                               hint="Call cstorch.backend(\"CSX\", ...) before building the DataExecutor.")
        if not isinstance(dataloader, DataLoader):
            raise NotADataLoader(f"{NOT_A_LOADER} Got a {type(dataloader).__name__}.",
                                 hint="Wrap it: dataloader = cstorch.utils.data.DataLoader(input_fn, ...), where "
                                      "input_fn returns the torch DataLoader.")
        if profiler_activities or listeners:  # an empty list asks for no activity beyond the defaults
            raise InvalidArgument("DataExecutor: profiler activities and tensor listeners are not simulated here.",
                                  hint="Leave profiler_activities and listeners unset or empty: executor.profiler tracks the "
                                       "samples and their rates.")
        if micro_batch_size is not None:
            backend.csx.performance.micro_batch_size = micro_batch_size  # checked as the setting is
        if cs_config is not None:
            _apply_cluster(backend, cs_config)
        config = backend.config
        if config.compile_only or config.validate_only:
            if num_steps is not None and num_steps > 1:
                warnings.warn("Specified num_steps > 1 when backend was configured for compile/validate only. "
                              "Setting num_steps to 1.", stacklevel=2)
            num_steps = 1
        elif num_steps is None:
            try:
                num_steps = len(dataloader)
            except TypeError:
                raise InvalidArgument("DataExecutor: could not infer the number of steps as the length of the "
                                      "dataloader is not known.",
                                      hint="Please provide num_steps to the data executor.") from None
        self.num_steps = _whole("num_steps", num_steps, 1)
        self.dataloader, self.writer = dataloader, writer
        self.checkpoint_schedule = _schedule(checkpoint_steps, self.num_steps)
        self.activation_steps = _aligned(activation_steps, self.checkpoint_schedule, self.num_steps)
        self.profiler = Profiler()
        self.artifact_dir: pathlib.Path | None = None  # set when iteration begins (a Path, as the real one)
        self._step = -1  # the 0-indexed step whose batch the loop holds

    def __len__(self) -> int:
        return self.num_steps

    @property
    def iteration(self) -> int:
        """The 0-indexed step the loop is on."""
        return self._step

    @property
    def user_iteration(self) -> int:
        """The 1-indexed step the loop is on."""
        return self._step + 1

    @property
    def on_final_iteration(self) -> bool:
        return self.user_iteration >= self.num_steps

    def __iter__(self):
        backend = process_backend.current()
        run = self._begin(backend)
        try:
            for batch in self.dataloader.batches_for(run, self.num_steps):
                if backend.kind == "GPU":
                    batch = backend.device.move_to_device(batch)
                self._step += 1
                self.profiler.step(samples_of(batch))  # counted as the loop takes it, as the real one counts
                yield batch
            run.in_loop = False
            run.finish()
        finally:
            run.in_loop = False
            if backend.executor is self:
                backend.executor = None

    def _begin(self, backend) -> Run:
        """Start this executor's run (see the module docstring), after the previous one."""
        other = backend.executor
        if other is not None:
            raise InvalidState(
                f"A DataExecutor is already running (at step {other.user_iteration} of {other.num_steps}): each "
                f"DataExecutor is one run on the system, and the system runs one at a time.",
                hint="Iterate the DataExecutors one after the other (e.g. validate after the training loop, not "
                     "inside it).")
        prior = backend.run
        if not prior.finished:
            if prior.executor is None and prior.program is not None:
                raise InvalidState("A run of a compile_step outside any DataExecutor is in progress in this process: "
                                   "the system runs one at a time.",
                                   hint="Run every step of the process inside DataExecutors.")
            prior.finish()  # an earlier executor's loop was left (break): its run ends now
        backend.executors_run += 1
        root = os.path.join(backend.require_config().model_dir, "executors")
        self.artifact_dir = pathlib.Path(root, f"{backend.executors_run:06d}")
        os.makedirs(self.artifact_dir, exist_ok=True)
        _link_latest(root, os.path.basename(self.artifact_dir))
        self._step = -1
        backend.run = Run(executor=self, model_dir=str(self.artifact_dir), checkpoint_schedule=self.checkpoint_schedule,
                          activation_steps=self.activation_steps, last_step=self.num_steps, in_loop=True)
        backend.executor = self
        return backend.run


def current_executor() -> DataExecutor:
    """The DataExecutor whose loop is running in this process; InvalidState outside any (and
    before a backend is made, as current_backend_impl says)."""
    executor = current_backend_impl().executor
    if executor is None:
        raise InvalidState("Detected that a data executor was not used: no DataExecutor loop is running.",
                           hint="Wrap the dataloader in a Cerebras DataExecutor, "
                                "executor = cstorch.utils.data.DataExecutor(dataloader, ...), and ask for the "
                                "current executor inside `for batch in executor:`.")
    return executor


def _schedule(checkpoint_steps, num_steps: int) -> Schedule:
    if checkpoint_steps is None:
        return Schedule([])
    if isinstance(checkpoint_steps, Schedule):
        return checkpoint_steps
    if isinstance(checkpoint_steps, int) and not isinstance(checkpoint_steps, bool):
        return Schedule.every(_whole("checkpoint_steps", checkpoint_steps, 0), num_steps)
    raise InvalidArgument(f"DataExecutor: checkpoint_steps must be None, an integer or a "
                          f"cstorch.utils.data.Schedule, but got {checkpoint_steps!r}.")


def _aligned(activation_steps, schedule: Schedule, num_steps: int) -> int:
    """activation_steps (default 1, at most num_steps), reduced to divide every checkpoint step."""
    every = min(num_steps, 1 if activation_steps is None else _whole("activation_steps", activation_steps, 1))
    aligned = math.gcd(every, schedule.common_divisor(num_steps))
    if aligned != every:
        warnings.warn(f"Activation frequency was reduced from {every} to {aligned} because of the checkpoint "
                      f"schedule: step closures (checkpoint closures too) run on activation steps only, and some "
                      f"run on the checkpoint {schedule.describe(num_steps)}. To avoid the reduction make "
                      f"sure that activation steps are divisible by all checkpoint steps.", stacklevel=3)
    return aligned


def _apply_cluster(backend, cs_config) -> None:
    """The backend's configuration with the cluster config's fields, checked as configure checks
    them; csd must stay the one the backend reached."""
    if not isinstance(cs_config, ClusterConfig):
        raise InvalidArgument(f"DataExecutor: cs_config must be a cstorch.utils.CSConfig, not "
                              f"{type(cs_config).__name__}.")
    config = backend.config
    given = cs_config.configure_kwargs(PARAMETERS)
    for name in ("mgmt_address", "key"):
        if name in given and given[name] != getattr(config, name):
            raise InvalidArgument(f"DataExecutor: cs_config names {name} {given[name]!r}, but the backend reached csd "
                                  f"with {getattr(config, name)!r} when it was made.",
                                  hint="Give csd's address and key to cstorch.backend (cluster_config=…) instead.")
    current = {name: getattr(config, name) for name in PARAMETERS}
    try:
        backend.config = settings(**{**current, **given})
    except InvalidArgument as exc:
        raise InvalidArgument(f"DataExecutor: cs_config: {exc.message.removeprefix('configure: ')}", exc.hint) \
            from None


def _link_latest(root: str, name: str) -> None:
    """`<root>/latest` → `name` (relative, replaced atomically)."""
    link = os.path.join(root, "latest")
    tmp = f"{link}.tmp-{os.getpid()}"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(name, tmp)
    os.replace(tmp, link)
