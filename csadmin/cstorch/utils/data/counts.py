"""`cstorch.utils.data.compute_num_steps` and `infer_batch_size`: the numbers a script plans a run
with, reckoned as the real package reckons them.

    total = cstorch.utils.data.compute_num_steps(dataloader, num_epochs=3)   # e.g. for a scheduler
    size = cstorch.utils.data.infer_batch_size(batch)                         # 32, or None

`compute_num_steps(dataloader, initial_step=0, num_steps=None, max_steps=None, num_epochs=None,
steps_per_epoch=None, grad_accum_steps=1)` is the smallest of `num_epochs` × the steps of an
epoch (`steps_per_epoch`, default the loader's length, divided by `grad_accum_steps`),
`num_steps`, and `max_steps - initial_step`. Refused: `num_epochs` with `num_steps`, a count
that is not a whole number (zero only for `initial_step`), none of num_epochs / num_steps /
max_steps, `steps_per_epoch` or `grad_accum_steps` beyond the loader's length, a loader with no
batch, `num_epochs` for a loader of unknown length, and an `initial_step` already at `max_steps`.

`infer_batch_size(data, batch_size=None)`: the first dimension every tensor of a batch (a tensor,
or dicts/lists/tuples of them; a 0-d tensor counts 1) shares. Sizes that differ within the batch,
or from `batch_size`, are refused on a CSX backend (INVALID_STATE, a RuntimeError as the real
one raises: the system is programmed for one batch shape) and warned about elsewhere, in the real
package's words (the answer is then None within a batch, the batch's own size against
`batch_size`); a batch without tensors is refused.
"""

from __future__ import annotations

import math
import warnings

from csadmin.errors import InvalidArgument, InvalidState

from ...backend import use_cs
from ._utils.batches import tensors


def _count(name: str, value, none: bool = True, zero: bool = False) -> None:
    if value is None:
        if not none:
            raise InvalidArgument(f"`{name}` cannot be None.")
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgument(f"`{name}` must be an integer, but got {type(value)}.")
    if value < 0:
        raise InvalidArgument(f"`{name}` cannot be negative, but got {value}.")
    if value == 0 and not zero:
        raise InvalidArgument(f"`{name}` must be greater than zero.")


def compute_num_steps(dataloader, initial_step: int = 0, num_steps=None, max_steps=None, num_epochs=None,
                      steps_per_epoch=None, grad_accum_steps: int = 1) -> int:
    """The steps a run of `dataloader` executes (see the module docstring)."""
    if num_epochs is not None and num_steps is not None:
        raise InvalidArgument("Only one of `num_epochs` or `num_steps` can be specified.")
    _count("initial_step", initial_step, none=False, zero=True)
    for name, value in (("num_steps", num_steps), ("max_steps", max_steps), ("num_epochs", num_epochs),
                        ("steps_per_epoch", steps_per_epoch)):
        _count(name, value)
    _count("grad_accum_steps", grad_accum_steps, none=False)
    try:
        length = len(dataloader)
    except TypeError:
        length = None
    if length is None:
        if num_epochs is not None:
            raise InvalidArgument("Specifying num_epochs for datasets with unknown length is not allowed.",
                                  hint="Please control training behavior through number of steps instead.")
        steps_per_epoch = 1
    else:
        if length <= 0:
            raise InvalidArgument("Dataloader does not generate any batches.")
        if steps_per_epoch is not None and steps_per_epoch > length:
            raise InvalidArgument(f"The requested steps per epoch of {steps_per_epoch} exceeds total steps in an "
                                  f"epoch, which is {length}.")
        steps_per_epoch = length if steps_per_epoch is None else steps_per_epoch
        if grad_accum_steps > steps_per_epoch:
            raise InvalidArgument(f"Gradient accumulation steps of {grad_accum_steps} is greater than batches per "
                                  f"epoch of {steps_per_epoch}.")
        steps_per_epoch //= grad_accum_steps
    total = math.inf
    if num_epochs is not None:
        total = min(total, num_epochs * steps_per_epoch)
    if num_steps is not None:
        total = min(total, num_steps)
    if max_steps is not None:
        if max_steps - initial_step <= 0:
            raise InvalidState(f"Initial global step {initial_step} already exceeds max step {max_steps}.",
                               hint="Raise max_steps, or resume from an earlier step.")
        total = min(total, max_steps - initial_step)
    if math.isinf(total):
        raise InvalidArgument("One of num_epochs, num_steps, or max_steps must be provided.")
    return total


def infer_batch_size(data, batch_size=None) -> int | None:
    """The batch size `data` has (see the module docstring)."""
    sizes = {1 if t.dim() == 0 else t.shape[0] for t in tensors(data)}
    if not sizes:
        raise InvalidArgument("We could not detect any torch tensors in the input data returned by the dataloader.",
                              hint="Return a tensor, or nested dicts/lists/tuples of tensors, from the dataloader.")
    if len(sizes) > 1:
        if use_cs():
            raise InvalidState(f"Only uniform batch sizes are supported in CS runs, but the dataloader returned a "
                               f"batch with batch sizes {_as_set(sizes)}. ",
                               hint="Give every tensor of a batch the same first dimension.")
        warnings.warn(f"Detected non-uniform batch sizes within the same batch: {_as_set(sizes)}. While this is "
                      f"allowed in non-CSX runs, it may throw off metrics such as rate profiling. The run will "
                      f"proceed assuming no batch size.", stacklevel=2)
        return None
    (size,) = sizes
    if batch_size is not None and size != batch_size:
        if use_cs():
            raise InvalidState(f"Only uniform batch sizes are supported in CS runs, but the dataloader returned "
                               f"two different batches with batch sizes {batch_size} and {size}. Make sure to set "
                               f"`drop_last=True` in the dataloader.",
                               hint="Batch with torch.utils.data.DataLoader(..., drop_last=True).")
        warnings.warn(f"Detected non-uniform batch sizes between batches ({batch_size} vs {size}). While this is "
                      f"allowed in non-CSX runs, it may throw off metrics such as rate profiling. ", stacklevel=2)
    return size


def _as_set(sizes: set) -> str:
    """The sizes as the real package's messages show them (a set), smallest first."""
    return "{" + ", ".join(str(size) for size in sorted(sizes)) + "}"
