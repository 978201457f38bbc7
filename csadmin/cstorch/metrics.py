"""cstorch.metrics: evaluation metrics that accumulate on the system (004, "Evaluation Metrics").

    accuracy = cstorch.metrics.AccuracyMetric("accuracy", compute_on_system=True)
    @cstorch.compile_step
    def evaluation_step(batch):
        ...
        accuracy(labels=targets, predictions=outputs.argmax(-1).int())
    ...
    print(f"Eval Accuracy: {float(accuracy)}")
    for name, value in cstorch.metrics.compute_all_metrics():    # every metric of the process
        writer.add_scalar(name, value, global_step)

Rules, as the documents give them: in weight streaming mode compute_on_system must be True
(False is refused when the metric is made or updated under a weight-streaming compile). A metric
returns a single result: its running state is tensors updated in place inside the step, and only
the final value may be read: reading it inside a step, or between the first and the last step of
a run whose length is known, is refused (001, "Eval metrics"). Outside a compiled run (plain
eager use) it reads at any time. Here both settings of compute_on_system compute the same sums on
this CPU; the setting matters for the weight-streaming rule.

Every metric made in the process is the backend's to list (announced, weakly held): R1.8's
`compute_all_metrics()` reads each one's final value, as (name, value) pairs in the order they
were made.
"""

from __future__ import annotations

import abc

import torch

from csadmin.errors import InvalidArgument, InvalidState

import csadmin.cstorch.state as state

WS_RULE = "for weight streaming mode, compute_on_system must be set to true"
FINAL_RULE = "Eval metrics are only allowed to return a single result value: only the final metric value can be read"
_SUM = torch.float64  # exact sums of counts up to 2**53


class Metric(abc.ABC):
    """A named metric; subclasses define `update` (tensor ops) and `_value` (the result)."""

    def __init__(self, name: str, compute_on_system: bool = True):
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"A metric's name is a non-empty string; got {name!r}.")
        if not isinstance(compute_on_system, bool):
            raise InvalidArgument(f"{name}: compute_on_system is True or False; got {compute_on_system!r}.")
        self.name = name
        self.compute_on_system = compute_on_system
        self._check_mode()
        self._state = self._initial_state()
        state.current().announce(self)  # compute_all_metrics() lists it

    @abc.abstractmethod
    def _initial_state(self) -> dict[str, torch.Tensor]:
        """The running sums, zero."""

    @abc.abstractmethod
    def update(self, *args, **kwargs) -> None:
        """Add one batch to the running sums, in place, with torch ops only."""

    @abc.abstractmethod
    def _value(self) -> torch.Tensor:
        """The result from the running sums."""

    def __call__(self, *args, **kwargs) -> None:
        self._check_mode()
        with torch.no_grad():
            self.update(*args, **kwargs)

    def compute(self) -> float:
        """The final value (refused inside a step and before the run's last step)."""
        backend = state.current()
        if backend.in_step():
            raise InvalidState(f"Metric {self.name!r} was read inside a step: {FINAL_RULE}, after the run.",
                               hint="Read it once the loop is done (float(metric)).")
        run = backend.run
        if backend.execmode is not None and run.last_step is not None and run.first_step < run.step < run.last_step:
            raise InvalidState(f"Metric {self.name!r} was read after step {run.step} of {run.last_step}: "
                               f"{FINAL_RULE}, after the last step.", hint="Read it once the loop is done.")
        return float(self._value())

    def __float__(self) -> float:
        return self.compute()

    def reset(self) -> None:
        """Zero the running sums in place."""
        for tensor in self._state.values():
            tensor.zero_()

    def _check_mode(self) -> None:
        if not self.compute_on_system and state.current().execmode == "WEIGHT_STREAMING":
            raise InvalidState(f"Metric {self.name!r} has compute_on_system=False: {WS_RULE}.",
                               hint="Make it with compute_on_system=True.")


class MetricValues(dict):
    """Metrics' final values by name, read both ways the releases read them: R1.8's runner loops
    `for name, value in compute_all_metrics():` (iterating gives the pairs), later scripts call
    `.items()`, index by name or `dict(...)` it (a dict, in the order the metrics were made)."""

    def __iter__(self):
        return iter(self.items())


def _named(metrics: list) -> list[tuple[str, "Metric"]]:
    """The metrics by name, a name several share numbered `name.0`, `name.1`, … (as the later
    releases' get_all_metrics names them)."""
    counts: dict[str, int] = {}
    for metric in metrics:
        counts[metric.name] = counts.get(metric.name, 0) + 1
    seen: dict[str, int] = {}
    named = []
    for metric in metrics:
        index = seen[metric.name] = seen.get(metric.name, -1) + 1
        named.append((f"{metric.name}.{index}" if counts[metric.name] > 1 else metric.name, metric))
    return named


def get_all_metrics():
    """The later releases' name: every metric of this process, as (name, metric) pairs in the
    order they were made."""
    yield from _named(state.current().announced(Metric))


def compute_all_metrics() -> MetricValues:
    """Every metric of this process and its final value by name (MetricValues). Each read follows
    `Metric.compute`'s rules: refused inside a step and before the run's last step."""
    return MetricValues((name, metric.compute()) for name, metric in _named(state.current().announced(Metric)))


def _weights(owner: str, like: torch.Tensor, weights) -> torch.Tensor:
    if weights is None:
        return torch.ones(like.shape, dtype=_SUM)
    if not isinstance(weights, torch.Tensor) or weights.shape != like.shape:
        raise InvalidArgument(f"{owner}: weights must be a tensor of the labels' shape {tuple(like.shape)}.")
    return weights.to(_SUM)


class AccuracyMetric(Metric):
    """The (weighted) fraction of predictions equal to their labels:
    accuracy(labels=..., predictions=..., weights=None)."""

    def _initial_state(self):
        return {"correct": torch.zeros((), dtype=_SUM), "total": torch.zeros((), dtype=_SUM)}

    def update(self, labels: torch.Tensor, predictions: torch.Tensor, weights=None) -> None:
        if not isinstance(labels, torch.Tensor) or not isinstance(predictions, torch.Tensor) \
                or labels.shape != predictions.shape:
            raise InvalidArgument(f"{self.name}: labels and predictions are tensors of one shape; got "
                                  f"{getattr(labels, 'shape', labels)} and {getattr(predictions, 'shape', predictions)}.")
        w = _weights(self.name, labels, weights)
        self._state["correct"].add_(((labels == predictions).to(_SUM) * w).sum())
        self._state["total"].add_(w.sum())

    def _value(self):
        return self._state["correct"] / self._state["total"]


class PerplexityMetric(Metric):
    """exp of the mean loss per token: perplexity(labels=..., loss=..., weights=None), `loss`
    the batch's mean loss per token, the tokens counted from `weights` (or all of `labels`)."""

    def _initial_state(self):
        return {"loss": torch.zeros((), dtype=_SUM), "tokens": torch.zeros((), dtype=_SUM)}

    def update(self, labels: torch.Tensor, loss: torch.Tensor, weights=None) -> None:
        if not isinstance(labels, torch.Tensor) or not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise InvalidArgument(f"{self.name}: labels is a tensor and loss a one-element tensor (the mean loss per "
                                  "token).")
        tokens = _weights(self.name, labels, weights).sum()
        self._state["loss"].add_(loss.detach().reshape(()).to(_SUM) * tokens)
        self._state["tokens"].add_(tokens)

    def _value(self):
        return torch.exp(self._state["loss"] / self._state["tokens"])
