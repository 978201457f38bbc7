"""Every metric of the process by name: the later releases' `get_all_metrics()` and the first
release's `compute_all_metrics()`.

    for name, metric in cstorch.metrics.get_all_metrics():       # 2.x: (name, metric)
        writer.add_scalar(name, float(metric), step)
    for name, value in cstorch.metrics.compute_all_metrics():    # R1.8's runner: (name, value)
        writer.add_scalar(name, value, step)

The metrics are the ones the backend was told of (announced, weakly held), grouped by name in the
order each name first appeared, as the real package's registry lists them; a name several metrics
share is numbered `name.0`, `name.1`, … in the order they were made.
"""

from __future__ import annotations

import torch

from ..backend import process_backend
from .metric import Metric


class MetricValues(dict):
    """Metrics' final values by name, read both ways the releases read them: R1.8's runner loops
    `for name, value in compute_all_metrics():` (iterating gives the pairs), later scripts call
    `.items()`, index by name or `dict(...)` it."""

    def __iter__(self):
        return iter(self.items())


def _named(metrics: list) -> list[tuple[str, Metric]]:
    by_name: dict[str, list] = {}
    for metric in metrics:
        by_name.setdefault(metric.name, []).append(metric)
    return [(f"{name}.{i}" if len(group) > 1 else name, metric)
            for name, group in by_name.items() for i, metric in enumerate(group)]


def get_all_metrics():
    """Every metric of this process as (name, metric) pairs (see the module docstring)."""
    yield from _named(process_backend.current().announced(Metric))


def _plain(value):
    """A one-element tensor (or a number) as a float; anything else a metric computes as it is."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    return float(value) if isinstance(value, (int, float)) else value


def compute_all_metrics() -> MetricValues:
    """Every metric of this process and its final value by name (MetricValues). Each read follows
    `Metric.compute`'s rules: refused inside a step and before the run's last step."""
    return MetricValues((name, _plain(metric.compute())) for name, metric in get_all_metrics())
