"""`cstorch.summarize_scalar` and `cstorch.summarize_tensor`: a step's values, written after it to
the DataExecutor's SummaryWriter.

    writer = cstorch.utils.tensorboard.SummaryWriter(log_dir="out/train")
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=100, writer=writer)

    @cstorch.trace
    def training_step(batch):
        ...
        cstorch.summarize_scalar("loss", loss)        # TensorBoard's scalar "loss"
        cstorch.summarize_tensor("logits", logits)    # the whole tensor (writer.add_tensor)

Each is a step closure (utils/step_closures.py): called inside the step, it runs after every activation
step with the value the tensor has then, and writes to the writer of the DataExecutor whose loop
is running at step `writer.base_step + k` (k the executor's 0-indexed step). With no writer it
warns and writes nothing. Refused: a call before any backend exists (the real package's "No
active Cerebras backend found"), a scalar that is not a number or a one-element tensor, a tensor
summary of something not a tensor, and one for a writer that cannot write tensors (torch's own
SummaryWriter, given to the executor instead of cstorch's).
"""

from __future__ import annotations

import warnings

import torch

from csadmin.errors import InvalidArgument

from ...backend import process_backend
from ...backend import current_backend_impl
from ..step_closures import step_closure
from .writer import SummaryWriter


def summarize_scalar(name: str, scalar) -> None:
    """Write `scalar` (a number, or a tensor of one element) under `name` after the step."""
    if not isinstance(scalar, (int, float, torch.Tensor)):
        raise InvalidArgument(f"Expected int, float, or torch.Tensor for scalar summary but got: {type(scalar)}",
                              hint="Summarize a number or a one-element tensor (cstorch.summarize_tensor for others).")
    if isinstance(scalar, torch.Tensor) and scalar.numel() != 1:
        raise InvalidArgument(f"Expected tensor to be a scalar but tensor has size: {scalar.size()}",
                              hint=f"Reduce it first (e.g. {name}.mean()), or use cstorch.summarize_tensor.")
    writer = _writer("scalar", name)
    if writer is not None:
        _write_scalar(writer, name, scalar)


def summarize_tensor(name: str, tensor: torch.Tensor) -> None:
    """Write `tensor` (any shape) under `name` after the step: read it back with
    cstorch.utils.tensorboard.SummaryReader(log_dir).read_tensor(name)."""
    if not isinstance(tensor, torch.Tensor):
        raise InvalidArgument(f"Expected torch.Tensor for tensor summary but got: {type(tensor)}",
                              hint="Summarize numbers with cstorch.summarize_scalar.")
    writer = _writer("tensor", name)
    if writer is None:
        return
    if not isinstance(writer, SummaryWriter):  # torch's has an add_tensor of its own, of another format
        raise InvalidArgument(f"The tensor summary {name!r} cannot be written: the DataExecutor's writer is a "
                              f"{type(writer).__module__}.{type(writer).__name__}, which does not write Cerebras "
                              f"tensor summaries.",
                              hint="Give the DataExecutor a cstorch.utils.tensorboard.SummaryWriter (torch's, plus "
                                   "base_step and the tensor summaries SummaryReader reads).")
    _write_tensor(writer, name, tensor)


def _writer(kind: str, name: str):
    """The running DataExecutor's writer; None, with a warning, when it has none. InvalidState
    before any backend exists."""
    current_backend_impl()
    executor = process_backend.current().executor
    writer = None if executor is None else executor.writer
    if writer is None:
        warnings.warn(f"The {kind} summary {name!r} was not saved as no SummaryWriter was provided: to write "
                      f"summaries, pass a SummaryWriter to the DataExecutor "
                      f"(executor = cstorch.utils.data.DataExecutor(..., writer=writer)).", stacklevel=3)
    return writer


def _step(writer) -> int:
    """The summary step of the step just run: base_step + its 0-indexed position in the run."""
    run = process_backend.current().run
    return getattr(writer, "base_step", 1) + run.step - run.first_step - 1


@step_closure
def _write_scalar(writer, name: str, value) -> None:
    writer.add_scalar(name, value.item() if isinstance(value, torch.Tensor) else value, _step(writer))


@step_closure
def _write_tensor(writer, name: str, tensor: torch.Tensor) -> None:
    writer.add_tensor(name, tensor.detach(), step=_step(writer))
