"""`cstorch.scalar_summary(name, tensor)` and `cstorch.save_summaries(writer, step)`: scalars a
script summarizes, written to its own TensorBoard writer (R1.8's API).

    @cstorch.compile_step
    def training_step(batch):
        ...
        cstorch.scalar_summary("grad_norm", grad_norm)       # inside: every step's value
        return loss

    loss = training_step(batch)
    cstorch.scalar_summary("loss", loss)                     # outside: this step's value
    cstorch.save_summaries(writer, global_step)              # writes what is pending, at global_step

A summary's value is the step's, materialized as a step closure's tensors are: called inside the
step, the summary is part of the program and takes its tensor's value at the end of every step;
called outside, it takes the value now (the step before it has executed). Either way it waits in
the run's record of pending scalars (`Run.scalars`: name → float, the last value per name) until
`save_summaries(writer, step)` writes each with `writer.add_scalar(name, value, step)`, flushes
the writer (scripts rarely close theirs, and an unflushed event is lost when the process ends) and
empties the record. compile_only / validate_only runs execute nothing, so nothing is pending.
"""

from __future__ import annotations

import numbers

import torch

from csadmin.errors import InvalidArgument, InvalidState

from ...backend import process_backend
from ..step_closures import step_closure


@step_closure
def _pend(name: str, value) -> None:
    """Record `value`, materialized (a step closure: after the step when called inside it)."""
    process_backend.current().run.scalars[name] = float(value)


def scalar_summary(name: str, tensor) -> None:
    """Summarize `tensor`'s one value as the scalar `name` (see the module docstring)."""
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"scalar_summary: name must be a non-empty string, not {name!r}.")
    if isinstance(tensor, torch.Tensor):
        if tensor.numel() != 1:
            raise InvalidArgument(f"scalar_summary({name!r}, …): the tensor has shape {tuple(tensor.shape)}; a "
                                  "scalar summary is one value.",
                                  "Reduce it first (e.g. tensor.mean() or tensor.norm()).")
    elif isinstance(tensor, bool) or not isinstance(tensor, numbers.Real):
        raise InvalidArgument(f"scalar_summary({name!r}, …): the value is a {type(tensor).__name__}, not a "
                              "one-element tensor or a number.")
    _pend(name, tensor)


def save_summaries(writer, step: int) -> None:
    """Write every pending scalar to `writer` (a torch.utils.tensorboard.SummaryWriter) at `step`,
    flush it, and forget them."""
    backend = process_backend.current()
    if backend.in_step():
        raise InvalidState("cstorch.save_summaries was called inside a compile_step function: the values it "
                           "writes exist only once the step has executed.",
                           "Call it in a function decorated with @cstorch.step_closure, or after the step.")
    if not callable(getattr(writer, "add_scalar", None)):
        raise InvalidArgument(f"save_summaries: writer is a {type(writer).__name__}, not a SummaryWriter.",
                              "Pass a torch.utils.tensorboard.SummaryWriter(log_dir=...).")
    if isinstance(step, bool) or not isinstance(step, numbers.Integral) or step < 0:
        raise InvalidArgument(f"save_summaries: step must be a whole number ≥ 0 (the global step), not {step!r}.")
    pending = backend.run.scalars
    if not pending:
        return
    for name, value in pending.items():
        writer.add_scalar(name, value, int(step))
    pending.clear()
    if callable(getattr(writer, "flush", None)):
        writer.flush()
