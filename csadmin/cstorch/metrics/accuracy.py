"""`AccuracyMetric(name)`: the fraction of predictions equal to their labels.

    accuracy = cstorch.metrics.AccuracyMetric("accuracy")    # R1.8: also compute_on_system=True
    accuracy(labels=targets, predictions=logits.argmax(-1), weights=None, dtype=None)

With `weights`, a batch adds the weights of its correct predictions and counts its tokens of
positive weight (a mask of 0s and 1s gives the accuracy over the unmasked tokens), as the real
package computes it. Predictions of another shape but as many elements are reshaped to the
labels' shape with a warning, as the real package does; other shapes are refused.
"""

from __future__ import annotations

import warnings

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.metrics.inputs as inputs
from .inputs import SUM
from .metric import Metric


class AccuracyMetric(Metric):
    """Accuracy over every batch since the last reset (see the module docstring)."""

    def reset(self) -> None:
        self.register_state("total_correct_predictions", torch.zeros((), dtype=SUM))
        self.register_state("total_num_tokens", torch.zeros((), dtype=SUM))
        self._dtype = None

    def update(self, labels, predictions, weights=None, dtype=None) -> None:
        inputs.tensors(self.name, labels=labels, predictions=predictions)
        if labels.shape != predictions.shape:
            if labels.numel() != predictions.numel():
                raise InvalidArgument(f"{self.name}: labels and predictions are tensors of one shape; got "
                                      f"{tuple(labels.shape)} and {tuple(predictions.shape)}.",
                                      hint="Pass one prediction per label, e.g. predictions=logits.argmax(-1).")
            warnings.warn(f"Shapes mismatch in accuracy metric\n    labels: {labels.shape}\n    predictions "
                          f"{predictions.shape}", stacklevel=3)
            predictions = predictions.reshape(labels.shape)
        inputs.weights_like(self.name, labels, weights)
        correct = (labels == predictions).to(SUM)
        if weights is not None:
            correct = correct * weights.to(SUM)
        inputs.into(self.total_correct_predictions, correct.sum())
        inputs.into(self.total_num_tokens, inputs.counted(weights, labels))
        self._dtype = dtype

    def compute(self) -> torch.Tensor:
        result = self.total_correct_predictions / self.total_num_tokens
        return result if self._dtype is None else result.to(self._dtype)
