"""`MeanIOUMetric(num_classes, ignore_classes=None, name=None)`: the mean intersection over union
of a segmentation, from the confusion matrix of every batch (confusion.py).

    miou = cstorch.metrics.MeanIOUMetric(num_classes=3)
    miou(labels=masks, predictions=logits.argmax(1), weights=None, dtype=None)

Per class c: IoU_c = TP_c / (predicted_c + labelled_c − TP_c) = TP / (TP + FP + FN). The value is
the mean of IoU_c over the classes not ignored whose union is not 0 (a class absent from both
labels and predictions does not count); 0 when no class counts.
"""

from __future__ import annotations

import torch

from .confusion import ConfusionMatrixMetric, mean_over_valid


class MeanIOUMetric(ConfusionMatrixMetric):
    """Mean IoU over classes (see the module docstring)."""

    def __init__(self, num_classes, ignore_classes=None, name=None):
        super().__init__(num_classes, ignore_classes, name)

    def compute(self) -> torch.Tensor:
        true_pos, predicted, labelled, mask = self._parts()
        true_pos = true_pos * mask
        return self._result(mean_over_valid(true_pos, (predicted + labelled - true_pos) * mask))
