"""A step of a CPU or GPU backend: the step function runs as written, every step, with PyTorch.

The vendor's CPU and GPU backends run the script's math eagerly, with no system: nothing is
captured, csd is not contacted, and none of the wafer's rules apply (a Python branch may differ
from step to step, a tensor may be read inside the step, any torch optimizer may step). What
stays is the API's own behaviour: step closures called inside the step run after it with the
values their tensors had when called (utils/step_closures.py), checkpoint closures run on the
DataExecutor's checkpoint steps, and the run ends after its last step. On a GPU backend the step
runs under CUDA autocast to the half dtype (`cstorch.amp`), as the vendor's GPU backend does; on
a CPU backend in the model's own precision.
"""

from __future__ import annotations

import contextlib

import torch

from ..amp.precision import half_dtype


def step(step_fn, backend, run, args: tuple, kwargs: dict):
    """Run `step_fn` once eagerly as step run.step + 1 of `run`; return its result."""
    precision = torch.autocast("cuda", dtype=half_dtype()) if backend.kind == "GPU" else contextlib.nullcontext()
    run.queued_closures = []
    with backend.stepping(), precision:
        result = step_fn.fn(*args, **kwargs)
    run.step += 1
    queued, run.queued_closures = run.queued_closures, []
    for fn, closure_args, closure_kwargs in queued:
        fn(*closure_args, **closure_kwargs)
    if run.last_step is not None and run.step >= run.last_step:
        run.finish()
    return result
