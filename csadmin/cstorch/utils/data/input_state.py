"""The cstorch DataLoader's `state_dict()` / `load_state_dict()`: saving where a restartable input
is and resuming it there (restartable.py has the protocol the input function's loader follows).

    @cstorch.checkpoint_closure
    def save(step):
        cstorch.save({"model": model.state_dict(), "dataloader": dataloader.state_dict()}, f"c{step}.mdl")
    ...
    dataloader.load_state_dict(cstorch.load("c50.mdl")["dataloader"])   # before the DataExecutor runs

`state_dict()` is the loader's `aggregate_state_dict` of every input worker's `state_dict`, each
seeing its own DataLoaderCheckpoint through get_worker_state(): what it streamed in the run so far.
It is asked for only where the weights may be fetched (a checkpoint step of the DataExecutor,
before its first step, after its loop), as the real one is; elsewhere it is refused.
  * In-process input (one worker): the loader that feeds the run is asked, with worker 0's
    checkpoint: the run's step and the samples this DataLoader handed it.
  * Input workers (num_workers_per_csx > 1): each worker captured its state when it made its
    share of the step's batches (_utils/restart_plan.py); the pool hands them over in worker
    order. Before a run's first step it is the state its workers start from.

`load_state_dict(state, strict=True)` is refused once the run has begun stepping (the workers
start from it). It resumes the in-process loader at once (deaggregate_state_dict, then
load_state_dict; `strict` when both take it); with input workers each worker does the same when
the next run starts, and this process's copy of the loader is resumed too, a failure there being
only a warning (the workers' is the one that counts), as on the real system.

A DataLoader fed to several DataExecutors in turn continues its input: each run starts where the
last one ended (its state captured there and loaded into the next run's input, as on the real
system), unless a state was loaded in between. With input workers that is the state of the last
run's final step, which they always capture: a run they fed that was left early (`break`) has
none, and the next starts its workers where that one started them.

R1.8's runs (configure, no DataExecutor) resume with `initial_step`; their input workers keep no
state, so asking one for it is refused. The host class provides `_local_input()` (the input
function's loader in this process) and `_pool` (its input workers, _utils/pool.py).
"""

from __future__ import annotations

import copy
import warnings

from csadmin.errors import InvalidState

from ...backend import process_backend
from ._utils.batches import samples_of
from ._utils.restart_plan import RestartPlan
from .restartable import (DataLoaderCheckpoint, is_restartable, load_into, load_kwargs,
                          worker_state_dict)

AT_CHECKPOINT = ("DataLoader state can only be requested at a checkpoint step, before the DataExecutor's first step "
                 "or after its loop")


class StatefulInput:
    """The DataLoader's restart methods (see the module docstring)."""

    _feed = (None, 0)  # (run, samples this DataLoader handed it): the in-process worker's streaming
    _initial = None  # (state, load kwargs, runs fed when loaded): where the next run's input starts
    _runs_fed = 0  # runs this DataLoader began feeding (a state loaded since the last began is fresh)

    @property
    def is_restartable(self) -> bool:
        """Whether the input function's loader implements RestartableDataLoader."""
        return is_restartable(self._local_input())

    def state_dict(self) -> dict:
        """The input's state at this step, aggregated over its workers (see the module docstring)."""
        loader = self._restartable("getting")
        backend = process_backend.current()
        if not backend.is_checkpoint_step():
            raise InvalidState(f"{AT_CHECKPOINT} (this is step {backend.run.step - backend.run.first_step}).",
                               hint="Call state_dict() in a function decorated with @cstorch.checkpoint_closure: "
                                    "it runs on the DataExecutor's checkpoint steps only.")
        run = backend.run
        step = run.step - run.first_step
        ours = self._pool is not None and self._pool.run is run  # this run's input workers
        if _workers_now() and ours and step > 0:
            states = self._pool.worker_states(step)
        else:
            if _workers_now():  # no step yet: where the workers start (the loader's own state if nowhere)
                start = self._pool.plan.start if ours else self._next_start(loader)
                if start is not None:
                    return copy.deepcopy(start)
            fed_run, samples = self._feed
            if fed_run is not run:  # nothing of this DataLoader's in this run yet
                step = samples = 0
            checkpoint = DataLoaderCheckpoint(local_worker_id=0, num_workers_per_csx=1, num_csx=1, wse_id=0,
                                              appliance_step=step, worker_step=step, samples_streamed=samples,
                                              user_state_dict=None)
            states = [worker_state_dict(loader, checkpoint)]
        return copy.deepcopy(loader.aggregate_state_dict(states))

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> None:
        """Resume the input at `state_dict` (a state_dict() of an earlier run), before the run
        steps (see the module docstring)."""
        loader = self._restartable("setting")
        run = process_backend.current().run
        started = run.in_loop or (run.executor is None and not run.finished)
        if (started and run.step != run.first_step) or (
                self._pool is not None and self._pool.run is run and not self._pool.closed):
            raise InvalidState("DataLoader state can only be loaded before execution: this run's input has "
                               "started already.",
                               hint="Call load_state_dict() only before iterating the DataExecutor.")
        kwargs = load_kwargs(loader, strict)
        self._initial = (copy.deepcopy(state_dict), kwargs, self._runs_fed)
        try:
            load_into(loader, state_dict, kwargs)
        except Exception as exc:  # noqa: BLE001 — with workers, theirs is the load that counts
            if not _workers_now():
                raise
            warnings.warn(f"Could not load the state onto the DataLoader in this process ({type(exc).__name__}: "
                          f"{exc}). The input workers load it when the run starts; if they cannot either, they "
                          f"fail then.", stacklevel=2)

    # -- for the DataLoader -----------------------------------------------------------------------

    def _check_input(self, loader) -> None:
        """A restartable loader's load methods must agree on `strict` (refused when first made)."""
        if is_restartable(loader):
            load_kwargs(loader)

    def _count_fed(self, batch) -> None:
        """Count a batch handed to the run in progress (the in-process worker's samples_streamed)."""
        run = process_backend.current().run
        fed_run, samples = self._feed
        self._feed = (run, (samples if fed_run is run else 0) + samples_of(batch))

    def _worker_plan(self, run, count: int) -> RestartPlan | None:
        """The restart plan of the input worker pool about to start for `run` (None: the input is
        not restartable)."""
        loader = self._local_input()
        start = self._next_start(loader) if is_restartable(loader) else None
        self._runs_fed += 1
        if not is_restartable(loader):
            return None
        return RestartPlan(num_steps=count, schedule=run.checkpoint_schedule, start=start, kwargs=self._load_kwargs())

    def _resume_in_process(self, run) -> None:
        """Before the in-process loader feeds `run`: a restartable one resumes at its state after
        the last run it fed (captured there, loaded now, as the workers' is), unless a state was
        loaded since."""
        loader = self._local_input()
        fresh = self._initial is not None and self._initial[2] == self._runs_fed
        fed_run, samples = self._feed
        self._runs_fed += 1
        if not is_restartable(loader) or fresh or fed_run is None or fed_run is run:
            return
        step = fed_run.step - fed_run.first_step
        checkpoint = DataLoaderCheckpoint(local_worker_id=0, num_workers_per_csx=1, num_csx=1, wse_id=0,
                                          appliance_step=step, worker_step=step, samples_streamed=samples,
                                          user_state_dict=None)
        load_into(loader, loader.aggregate_state_dict([worker_state_dict(loader, checkpoint)]), self._load_kwargs())

    def _load_kwargs(self) -> dict:
        return self._initial[1] if self._initial is not None else {}

    def _next_start(self, loader):
        """Where the next input workers start: a state loaded since the last run began, else the
        last pool's final state (a completed run) or, that run left early, where it started, else
        their input's beginning (None)."""
        if self._initial is not None and self._initial[2] == self._runs_fed:
            return self._initial[0]
        pool = self._pool
        if pool is None or pool.plan is None:
            return None
        if pool.taken < pool.plan.num_steps:  # (its workers may have captured the last step: not reached)
            return pool.plan.start
        return loader.aggregate_state_dict(pool.worker_states(pool.plan.num_steps))

    def _restartable(self, verb: str):
        loader = self._local_input()
        if not is_restartable(loader):
            raise InvalidState(
                f"DataLoader is not configured for {verb} state: its input function returned a "
                f"{type(loader).__name__}, which does not implement the RestartableDataLoader interface.",
                hint="Return a dataloader with state_dict, load_state_dict, aggregate_state_dict and "
                     "deaggregate_state_dict (cstorch.utils.data.RestartableDataLoader) to enable state_dict() "
                     "and load_state_dict().")
        if _workers_now() and not process_backend.current().executor_required:
            raise InvalidState(
                f"DataLoader state: the input workers of a run without a DataExecutor keep no state "
                f"(num_workers_per_csx={process_backend.current().config.num_workers_per_csx}).",
                hint="Run the steps in a cstorch.utils.data.DataExecutor (cstorch.backend), or resume with "
                     "the DataLoader's initial_step.")
        return loader


def _workers_now() -> bool:
    """Whether the next run of a DataLoader is fed by input workers (the configuration's now)."""
    config = process_backend.current().config
    return config is not None and config.fed_by_workers
