"""`FBetaScoreMetric(num_classes, beta=1.0, average_type="micro", ignore_labels=None, name=None)`:
the F-beta score of a classification, from the confusion matrix of every batch (confusion.py).

    f1 = cstorch.metrics.FBetaScoreMetric(num_classes=4)                  # F1, micro-averaged
    f2 = cstorch.metrics.FBetaScoreMetric(num_classes=4, beta=2.0, average_type="macro")
    f1(labels=targets, predictions=logits.argmax(-1), dtype=None)         # no weights, as the real one

F_beta = (1 + beta²)·P·R / (beta²·P + R), every ratio 0 where its denominator is 0.
  * "micro": P = Σ TP / Σ predicted and R = Σ TP / Σ labelled over the classes not ignored.
  * "macro": P_c, R_c and F_c per class; the value is the sum of F_c over the classes not ignored
    divided by their number (a class never seen counts as 0 in that mean).
Refused as the real package refuses: num_classes below 2, beta not positive, another average_type.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

from .confusion import ConfusionMatrixMetric, divide_no_nan

AVERAGES = ["micro", "macro"]


def _fbeta(precision, recall, beta2: float):
    return divide_no_nan((1.0 + beta2) * precision * recall, beta2 * precision + recall)


class FBetaScoreMetric(ConfusionMatrixMetric):
    """F-beta score (see the module docstring)."""

    def __init__(self, num_classes, beta: float = 1.0, average_type: str = "micro", ignore_labels=None,
                 name=None):
        owner = name or type(self).__name__
        if isinstance(beta, bool) or not isinstance(beta, (int, float)) or not beta > 0:
            raise InvalidArgument(f"{owner}: 'beta' should be a positive number, got {beta!r}.",
                                  hint="beta weighs recall beta times as much as precision: 1.0 is F1.")
        if average_type not in AVERAGES:
            raise InvalidArgument(f"{owner}: The average_type has to be one of {AVERAGES}, got {average_type!r}.")
        self.beta = float(beta)
        self.average_type = average_type
        super().__init__(num_classes, ignore_labels, name, least_classes=2)

    def update(self, labels, predictions, dtype=None) -> None:  # pylint: disable=arguments-differ
        super().update(labels, predictions, None, dtype)

    def compute(self) -> torch.Tensor:
        true_pos, predicted, labelled, mask = self._parts()
        beta2 = self.beta ** 2
        if self.average_type == "micro":
            hits = (true_pos * mask).sum()
            score = _fbeta(divide_no_nan(hits, (predicted * mask).sum()),
                           divide_no_nan(hits, (labelled * mask).sum()), beta2)
        else:
            per_class = _fbeta(divide_no_nan(true_pos, predicted), divide_no_nan(true_pos, labelled), beta2)
            score = (per_class * mask).sum() / mask.sum()
        return self._result(score)
