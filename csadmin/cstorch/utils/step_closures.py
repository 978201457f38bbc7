"""`@cstorch.step_closure` and `@cstorch.checkpoint_closure`: functions that read the step's
tensors, and when they run.

    @cstorch.step_closure                # its tensors' values, after the step
    def post_training_step(loss):
        print(loss.item())

    @cstorch.checkpoint_closure          # call it every step: it runs on checkpoint steps only
    def save_checkpoint(step):
        cstorch.save({"model": model.state_dict(), ...}, f"checkpoint_{step}.mdl")

A step closure called
  * while a step is captured (core/compiler.py): is recorded into the program and runs after
    every step, with the values its tensors have at the end of the step;
  * during an eager step (a CPU or GPU backend): runs after the step, with copies of its tensors
    as they were when it was called (the vendor's CPU and GPU backends copy them then; a GPU's
    tensors reach a closure on the CPU, wherever it was called);
  * otherwise: runs at once (the step before it has executed; nothing runs under compile_only
    or validate_only, where nothing materializes).
In a DataExecutor's run on the system it is *due* only on an activation step (every
`activation_steps`-th step and the last; the default, 1, is every step): on the others it is
skipped, as the real system fetches tensors only on those steps. And the system's weights are
never handed to a step closure: a parameter of a compiled model passed to one is refused with
the real package's advice, cstorch.save in a checkpoint closure.

A checkpoint closure is a step closure that is due, in addition, only on a checkpoint step: a
DataExecutor's (its `checkpoint_steps`, the last step included, or a Schedule), or, without one,
configure's `checkpoint_steps` and the run's last step; before the first step and after a
DataExecutor's loop always (the weights are the initial or the final ones).
"""

from __future__ import annotations

import functools

import torch
from torch.utils._pytree import tree_flatten, tree_map_only

from csadmin.errors import InvalidState

from ..backend import process_backend


def when_due(fn):
    """`fn`, run only when the run it runs after is on an activation step (the system's rule)."""

    @functools.wraps(fn)
    def due(*args, **kwargs):
        backend = process_backend.current()
        if backend.kind == "CSX" and not backend.run.is_activation_step():
            return None
        return fn(*args, **kwargs)

    return due


def dispatch(due, args: tuple, kwargs: dict):
    """Record, queue or run the closure `due` with these arguments (see the module docstring)."""
    backend = process_backend.current()
    run = backend.run
    if run.in_loop and backend.kind == "CSX":
        _refuse_weights(backend, getattr(due, "__name__", "closure"), (args, kwargs))
    if run.capture is not None:
        run.captured_closures.append((due, args, kwargs))
        return None
    if backend.in_step():  # an eager step: after it, with the values of now
        run.queued_closures.append((due, *_on_host(args, kwargs)))
        return None
    config = backend.config
    if run.program is not None and (config.compile_only or config.validate_only):
        return None  # nothing runs on the system, so nothing materializes
    if backend.kind == "GPU":
        args, kwargs = _on_host(args, kwargs)
    return due(*args, **kwargs)


def _on_host(args: tuple, kwargs: dict) -> tuple:
    """Copies of the arguments' tensors in this process's memory (a GPU's moved to the CPU), as
    the vendor's CPU and GPU backends hand them to step closures."""
    return tree_map_only(torch.Tensor, lambda t: t.detach().to("cpu", copy=True), (args, kwargs))


def step_closure(fn):
    """Decorate a function that reads tensors' values: it runs after the step, with them
    materialized (see the module docstring)."""
    due = when_due(fn)

    @functools.wraps(fn)
    def closure(*args, **kwargs):
        return dispatch(due, args, kwargs)

    return closure


def checkpoint_closure(fn):
    """Decorate a function that saves a checkpoint: call it at any step, it runs (as a step
    closure) only on checkpoint steps (see the module docstring)."""

    @functools.wraps(fn)
    def on_checkpoint_steps(*args, **kwargs):
        if process_backend.current().is_checkpoint_step():
            return fn(*args, **kwargs)
        return None

    due = when_due(on_checkpoint_steps)

    @functools.wraps(fn)
    def closure(*args, **kwargs):
        return dispatch(due, args, kwargs)

    return closure


def _refuse_weights(backend, name: str, arguments) -> None:
    params = {id(p): n for m in backend.models for n, p in m.model.named_parameters()}
    flat, _ = tree_flatten(arguments)
    for value in flat:
        if isinstance(value, torch.Tensor) and id(value) in params:
            raise InvalidState(
                f"Attempting to get weight tensor {params[id(value)]!r} in the step closure {name!r}, but the "
                f"system's weights are not handed to step closures.",
                hint="Please use the cstorch.save() API to save model weights, in a function decorated with "
                     "@cstorch.checkpoint_closure (it runs on the DataExecutor's checkpoint steps).")
