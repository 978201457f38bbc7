"""`DiceCoefficientMetric(num_classes, ignore_classes=None, name=None)`: the mean Dice coefficient
of a segmentation, from the confusion matrix of every batch (confusion.py).

    dice = cstorch.metrics.DiceCoefficientMetric(num_classes=3, ignore_classes=[0])
    dice(labels=masks, predictions=logits.argmax(1), weights=None, dtype=None)

Per class c: Dice_c = 2·TP_c / (predicted_c + labelled_c) = 2·TP / (2·TP + FP + FN). The value is
the mean of Dice_c over the classes not ignored whose predicted_c + labelled_c is not 0 (a class
absent from both labels and predictions does not count); 0 when no class counts.
"""

from __future__ import annotations

import torch

from .confusion import ConfusionMatrixMetric, mean_over_valid


class DiceCoefficientMetric(ConfusionMatrixMetric):
    """Mean Dice coefficient over classes (see the module docstring)."""

    def __init__(self, num_classes, ignore_classes=None, name=None):
        super().__init__(num_classes, ignore_classes, name)

    def compute(self) -> torch.Tensor:
        true_pos, predicted, labelled, mask = self._parts()
        return self._result(mean_over_valid(2 * true_pos * mask, (predicted + labelled) * mask))
