"""The batch shape a DataLoader's batches must keep: on the system every batch has the first
batch's sizes (the fabric is programmed for one batch shape; 000, "Drop remainder to enforce
fixed batch size"), so another is refused before the step runs, with the advice to batch with
drop_last=True. A CPU or GPU backend has no fabric: there a batch of another size only warns, in
the real package's words (`cstorch.utils.data.infer_batch_size`, which its DataLoader asks of
every batch against the last one's size).

    shape = BatchShape()
    shape.check(batch, index, kind)     # index: the batch's 0-based place in the run; kind: the backend's
"""

from __future__ import annotations

from csadmin.errors import ReprogramForbidden

from ..counts import infer_batch_size
from .batches import tensors

ADVICE = ("To ensure a fixed batch size across all steps, set drop_last=True when batching in the input "
          "function (torch.utils.data.DataLoader(..., drop_last=True)).")


class BatchShape:
    """The first batch's sizes, and (CPU/GPU) the last batch's size."""

    def __init__(self):
        self.sizes: list | None = None  # the first batch's tensors' first dimensions
        self.last_size: int | None = None  # CPU/GPU: what infer_batch_size compares the next batch with

    def check(self, batch, index: int, kind: str | None) -> None:
        """Check `batch` (see the module docstring)."""
        sizes = [t.shape[0] if t.dim() else None for t in tensors(batch)]
        if kind in ("CPU", "GPU"):
            self.last_size = infer_batch_size(batch, self.last_size)
        if self.sizes is None:
            self.sizes = sizes
        elif sizes != self.sizes and kind not in ("CPU", "GPU"):
            if len(sizes) != len(self.sizes):
                raise ReprogramForbidden(f"Batch {index + 1} holds {len(sizes)} tensors, the first batch held "
                                         f"{len(self.sizes)}: every batch must have the same structure.")
            was, now = next((a, b) for a, b in zip(self.sizes, sizes) if a != b)
            raise ReprogramForbidden(f"Inconsistent batch sizes detected: batch {index + 1} has size {now}, the "
                                     f"first batch had {was} (the fabric is programmed for one batch shape).",
                                     hint=ADVICE)
