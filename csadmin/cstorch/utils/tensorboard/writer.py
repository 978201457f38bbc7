"""`cstorch.utils.tensorboard.SummaryWriter`: torch's SummaryWriter, plus `base_step` and tensor
summaries laid out as the real package lays them out.

    writer = cstorch.utils.tensorboard.SummaryWriter(log_dir="out/train")   # base_step=1
    writer.add_scalar("loss", 0.5, 1)                  # torch's: TensorBoard's event file
    writer.add_tensor("logits", logits, step=1)        # the Cerebras tensor summary, below

Scalars, text, histograms… are torch's, in the event file `events.out.tfevents.<suffix>` that
TensorBoard reads. A tensor summary keeps the whole tensor, which TensorBoard has no plugin for:
the writer makes, beside its event file, the directory `events.out.csevents.<suffix>` (the same
suffix) holding `__metadata__` (`{"__version__": 1.1}`, the format's version) and, per summary,
`tensors/<name>/<step>.<local time %Y-%m-%dT%H:%M:%S.%f>.pt`: a torch.save'd dict of `step`,
`ns_since_epoch` (when it was written) and `tensor` — what a `TensorDescriptor` holds. The real
package's SummaryReader reads that layout, and so does this one (reader.py).

`base_step` is the step of an executor's first step's summaries (summary.py): a summary of the
executor's k-th step (0-indexed) is written at step `base_step + k`.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import time
from pathlib import Path

import torch
from torch.utils.tensorboard import SummaryWriter as _TorchSummaryWriter

METADATA = "__metadata__"
VERSION_KEY = "__version__"
VERSION = 1.1  # the real package's tensor summary format
TFEVENTS, CSEVENTS = "events.out.tfevents.", "events.out.csevents."


@dataclasses.dataclass(frozen=True)
class TensorDescriptor:
    """One tensor summary: its step, when it was written (ns since the epoch) and the tensor."""

    step: int
    ns_since_epoch: int
    tensor: torch.Tensor

    @property
    def utctime(self) -> datetime.datetime:
        """When it was written, as a naive UTC datetime."""
        moment = datetime.datetime.fromtimestamp(self.ns_since_epoch / 1e9, tz=datetime.timezone.utc)
        return moment.replace(tzinfo=None)

    def to_dict(self) -> dict:
        return {"step": self.step, "ns_since_epoch": self.ns_since_epoch, "tensor": self.tensor}

    @staticmethod
    def from_dict(values: dict) -> "TensorDescriptor":
        return TensorDescriptor(**values)


class SummaryWriter(_TorchSummaryWriter):
    """torch's SummaryWriter with `base_step` and `add_tensor` (see the module docstring)."""

    def __init__(self, *args, base_step: int = 1, **kwargs):
        super().__init__(*args, **kwargs)
        self.base_step = base_step
        # The event file's suffix names the tensor directory, so the two pair up in a log
        # directory several writers share; torch keeps the file's name in a private attribute,
        # so a writer without one gets the time instead, as the real package does for a directory.
        events = Path(getattr(self.file_writer.event_writer, "_file_name", "") or self.file_writer.get_logdir())
        if events.name.startswith(TFEVENTS):
            name = CSEVENTS + events.name[len(TFEVENTS):]
            events = events.parent
        else:
            name = f"{CSEVENTS}{datetime.datetime.now():%Y-%m-%dT%H:%M:%S.%f}"
        self.cs_events_dir = events / name
        self.cs_events_dir.mkdir(parents=True, exist_ok=True)
        metadata = self.cs_events_dir / METADATA
        if not metadata.exists():
            metadata.write_text(json.dumps({VERSION_KEY: VERSION}))

    def add_tensor(self, name: str, tensor: torch.Tensor, step: int) -> None:
        """Write `tensor` (detached) as the summary `name` at `step`."""
        directory = self.cs_events_dir / "tensors" / name
        directory.mkdir(parents=True, exist_ok=True)
        now = time.time_ns()
        stamp = datetime.datetime.fromtimestamp(now / 1e9)
        descriptor = TensorDescriptor(step=int(step), ns_since_epoch=now, tensor=tensor.detach())
        torch.save(descriptor.to_dict(), str(directory / f"{int(step)}.{stamp:%Y-%m-%dT%H:%M:%S.%f}.pt"))
