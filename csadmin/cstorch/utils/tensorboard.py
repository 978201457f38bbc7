"""`cstorch.utils.tensorboard.SummaryWriter` and `cstorch.summarize_scalar`.

    writer = cstorch.utils.tensorboard.SummaryWriter(log_dir="out/train")
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=100, writer=writer)

    @cstorch.trace
    def training_step(batch):
        ...
        cstorch.summarize_scalar("loss", loss)     # written at every activation step, after it ran

The writer is torch.utils.tensorboard's SummaryWriter (so `add_scalar` and the rest are torch's,
and TensorBoard reads its event files) with the real package's `base_step` (default 1): a summary
of the executor's k-th step (0-indexed) is written at step `base_step + k`. `summarize_scalar`
is a step closure (closures.py): called inside the step, it runs after every activation step
with the value the tensor has then; it writes to the writer of the DataExecutor whose loop is
running, and warns (writing nothing) when it was given none.
"""

from __future__ import annotations

import warnings

import torch
from torch.utils.tensorboard import SummaryWriter as _TorchSummaryWriter

import csadmin.cstorch.state as state
from ..step import step_closure


class SummaryWriter(_TorchSummaryWriter):
    """torch's SummaryWriter; `base_step` is the step of an executor's first step's summaries."""

    def __init__(self, *args, base_step: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self.base_step = base_step


def summarize_scalar(name: str, scalar) -> None:
    """Write `scalar` (a tensor of one element, or a number) under `name` after the step."""
    executor = state.current().executor
    writer = None if executor is None else executor.writer
    if writer is None:
        warnings.warn(f"The scalar summary {name!r} was not saved as no SummaryWriter was provided: to write "
                      f"summaries, pass a SummaryWriter to the DataExecutor "
                      f"(executor = cstorch.utils.data.DataExecutor(..., writer=writer)).", stacklevel=2)
        return
    _write(writer, name, scalar)


@step_closure
def _write(writer, name: str, value) -> None:
    run = state.current().run
    step = getattr(writer, "base_step", 1) + run.step - run.first_step - 1
    writer.add_scalar(name, value.item() if isinstance(value, torch.Tensor) else value, step)
