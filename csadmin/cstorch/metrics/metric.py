"""`cstorch.metrics.Metric`: the base every metric is written on, the later releases' protocol.

    class MeanAbsoluteError(cstorch.metrics.Metric):       # a script's own metric, the 2.x way
        def reset(self):                                    # the state, zero (also at construction)
            self.register_state("total", torch.tensor(0.0))
            self.register_state("count", torch.tensor(0.0))

        def update(self, predictions, targets):             # tensor ops only: it is traced
            self.total.add_((predictions - targets).abs().sum())
            self.count.add_(targets.numel())

        def compute(self):                                  # the value, from the state
            return self.total / self.count

    mae = MeanAbsoluteError("mae")
    mae(predictions, targets)        # forward: update, then compute (inside a step: the step's tensor)
    float(mae)                       # the final value, once the loop is done

The contract:
  * A Metric is a torch.nn.Module. Its state is what `reset()` registers with
    `register_state(name, tensor, persistent=False)`: a buffer, left out of `state_dict()` unless
    persistent. Inside a compiled step the state tensors existed before the step, so the
    captured program updates them in place on every step (core/capture.py), as the system does.
  * `update(...)` counts (`num_updates`) and runs under `torch.no_grad()`; `compute()` is cached
    until the next update or reset; `reset()` zeroes `num_updates`. Calling them directly counts
    and caches the same way: each instance's reset, update and compute go through this class.
  * Inside a step, the computed tensor is handed to a step closure that caches its value after
    the step, so reading the metric after the loop gives the last step's value without
    recomputing, as the real package does. A step is traced once per run on the system, so there
    `num_updates` counts the traced update once per run (every step on a CPU or GPU backend).
  * `reset()` re-registering a state of the same shape, dtype and device copies the new value
    into the existing tensor: a program captured earlier, or a model holding the metric as a
    submodule, keeps the tensor it updates.
  * The first release's arguments stay: `Metric(name, compute_on_system=True)`, and its rules
    (rules.py). `name=None` is the class's name.
Every metric is announced to the process's backend (weakly held) for `get_all_metrics()`.
"""

from __future__ import annotations

import abc

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.metrics.rules as rules
from ..backend import process_backend
from ..utils.step_closures import dispatch, when_due

_WRAPPED = ("reset", "update", "compute")  # the methods each instance routes through this class


class Metric(torch.nn.Module, abc.ABC):
    """A metric: subclasses implement reset, update and compute (see the module docstring)."""

    def __init__(self, name: str | None = None, compute_on_system: bool = True):
        if name is None:
            name = type(self).__name__
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"A metric's name is a non-empty string; got {name!r}.",
                                  hint="Name it, e.g. AccuracyMetric(\"accuracy\").")
        if not isinstance(compute_on_system, bool):
            raise InvalidArgument(f"{name}: compute_on_system is True or False; got {compute_on_system!r}.")
        super().__init__()
        self.name = name
        self.compute_on_system = compute_on_system
        rules.check_compute_on_system(self)
        self._num_updates = 0
        self._cached = ()  # (value,) once computed since the last update; () otherwise
        self._route()
        self.reset()
        process_backend.current().announce(self)  # get_all_metrics() lists it

    # -- the protocol subclasses implement -------------------------------------------------------

    @abc.abstractmethod
    def reset(self) -> None:
        """Register the state, zero (register_state)."""

    @abc.abstractmethod
    def update(self, *args, **kwargs) -> None:
        """Add one batch to the state, in place, with tensor ops only."""

    @abc.abstractmethod
    def compute(self):
        """The value, from the state."""

    # -- what the base gives -------------------------------------------------------------------

    @property
    def num_updates(self) -> int:
        """How many times update ran since the last reset (traced updates: once per run on CSX)."""
        return self._num_updates

    def register_state(self, name: str, tensor: torch.Tensor, persistent: bool = False) -> None:
        """Register `tensor` as the state `name` (a buffer, in state_dict() only if persistent),
        an attribute of the metric. A state of that name already there with the same shape, dtype
        and device takes the new value in place (see the module docstring)."""
        if not isinstance(tensor, torch.Tensor):
            raise InvalidArgument(f"{self.name}: the state {name!r} must be a tensor; got {type(tensor).__name__}.")
        current = self._buffers.get(name)
        if current is not None and (current.shape, current.dtype, current.device) == \
                (tensor.shape, tensor.dtype, tensor.device):
            with torch.no_grad():
                current.copy_(tensor)
            if persistent:
                self._non_persistent_buffers_set.discard(name)
            else:
                self._non_persistent_buffers_set.add(name)
            return
        self.register_buffer(name, tensor, persistent=persistent)

    def forward(self, *args, **kwargs):
        """Update with this batch, then compute: the value so far (inside a step, the step's)."""
        self.update(*args, **kwargs)
        return self._value()

    def __float__(self) -> float:
        rules.check_float(self)
        return float(self.compute())

    # -- routing -------------------------------------------------------------------------------

    def _route(self) -> None:
        """Make this instance's reset, update and compute go through the base (counting, caching,
        the rules), whatever the subclass defines. Instance attributes, dropped when pickled or
        copied and made again for the copy (__getstate__, __setstate__)."""
        for name, through in zip(_WRAPPED, (_reset, _update, _compute)):
            self.__dict__[name] = through.__get__(self)

    def __getstate__(self):
        copied = dict(self.__dict__)
        for name in _WRAPPED:
            copied.pop(name, None)
        return copied

    def __setstate__(self, copied) -> None:
        super().__setstate__(copied)
        self._route()

    def _value(self):
        """compute()'s result, cached until the next update; inside a step, a step closure
        replaces the cache with the value after the step."""
        if self._cached:
            return self._cached[0]
        result = type(self).compute(self)
        self._cached = (result,)
        if process_backend.current().in_step():
            dispatch(when_due(self._keep), (result,), {})
        return result

    def _keep(self, value) -> None:
        self._cached = (value,)


def _reset(self) -> None:
    type(self).reset(self)
    self._num_updates = 0
    self._cached = ()


def _update(self, *args, **kwargs) -> None:
    rules.check_compute_on_system(self)
    self._cached = ()
    with torch.no_grad():
        type(self).update(self, *args, **kwargs)
    self._num_updates += 1


def _compute(self):
    rules.check_compute(self)
    return self._value()
