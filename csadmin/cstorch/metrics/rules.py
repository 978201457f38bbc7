"""When a metric may be made, updated and read: the first release's two rules and the later
releases' one, each checked in one place.

  * Weight streaming needs `compute_on_system=True` (004, "Evaluation Metrics"): False is refused
    when the metric is made or updated while the backend targets weight streaming.
  * Only the final value may be read (001, "Eval metrics"): `float(metric)` inside a step is
    refused (the value exists only after the step); so is `metric.compute()` inside a step of the
    first release's `compile_step`, whose compute was a read of the value; and so is any read
    between the first and the last step of a run whose length is known. In the later releases'
    `@cstorch.trace` step, `compute()` is part of the step (forward calls it): it returns the
    step's tensor, which a step closure or the step's caller reads after the step.
  * A metric never updated cannot be computed on the system (the later releases' message): it has
    no result the program could hand back.
Outside a compiled run (plain eager use, a CPU or GPU backend before its loop) any read is allowed.
"""

from __future__ import annotations

from csadmin.errors import InvalidState

from ..backend import process_backend

WS_RULE = "for weight streaming mode, compute_on_system must be set to true"
FINAL_RULE = "Eval metrics are only allowed to return a single result value: only the final metric value can be read"


def check_compute_on_system(metric) -> None:
    """Refuse a metric made or updated with compute_on_system=False under weight streaming."""
    if not metric.compute_on_system and process_backend.current().execmode == "WEIGHT_STREAMING":
        raise InvalidState(f"Metric {metric.name!r} has compute_on_system=False: {WS_RULE}.",
                           hint="Make it with compute_on_system=True.")


def check_float(metric) -> None:
    """Refuse `float(metric)` inside a step: a value is read only after the step."""
    if process_backend.current().in_step():
        raise _inside_step(metric)


def check_compute(metric) -> None:
    """Refuse `metric.compute()` where the rules above forbid it."""
    backend = process_backend.current()
    if metric.num_updates == 0 and backend.kind == "CSX":
        raise InvalidState(
            f"Trying to compute metric `{metric.name}`, but the metric has not been updated. This is currently not "
            f"supported when running on CSX.",
            hint="Call the metric with a batch (metric(...) or metric.update(...)) inside the step before computing it.")
    if backend.in_step():
        if not backend.executor_required:  # the first release: compute() read the value
            raise _inside_step(metric)
        return
    run = backend.run
    if backend.execmode is not None and run.last_step is not None and run.first_step < run.step < run.last_step:
        raise InvalidState(f"Metric {metric.name!r} was read after step {run.step} of {run.last_step}: "
                           f"{FINAL_RULE}, after the last step.", hint="Read it once the loop is done.")


def _inside_step(metric) -> InvalidState:
    return InvalidState(f"Metric {metric.name!r} was read inside a step: {FINAL_RULE}, after the run.",
                        hint="Read it once the loop is done (float(metric)).")
