"""The confusion matrix the segmentation metrics (DiceCoefficientMetric, MeanIOUMetric,
FBetaScoreMetric) accumulate, and the pieces of arithmetic they share.

`confusion_matrix[i, j]` counts the tokens labelled i and predicted j (rows: the labels, columns:
the predictions), each adding its weight (1 without weights). As the real package does, the
counts of a batch are made in the predictions' dtype and the weights cast to it (integer
predictions: integer weights; a mask of 0s and 1s is unaffected), then added to the state. Off
the system (no CSX backend) a negative label or prediction is refused, as the real package does
there; on the system values are not read inside the step.
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.metrics.inputs as inputs
from ..backend import process_backend
from .inputs import SUM
from .metric import Metric


def divide_no_nan(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """num / den, 0 where den is 0."""
    zero = den == 0
    return torch.where(zero, torch.zeros_like(num), num) / torch.where(zero, torch.ones_like(den), den)


def class_mask(owner: str, num_classes: int, ignore) -> torch.Tensor:
    """1 for each class the mean is taken over, 0 for the classes in `ignore` (a list of class ids)."""
    mask = torch.ones(num_classes, dtype=SUM, device="cpu")
    if ignore is None:
        return mask
    ids = list(ignore) if isinstance(ignore, (list, tuple)) else None
    if ids is None or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < num_classes for c in ids):
        raise InvalidArgument(f"{owner}: the classes to ignore are a list of class ids in [0, {num_classes}); "
                              f"got {ignore!r}.", hint="Pass e.g. [0] to leave class 0 out of the mean, or None.")
    mask[ids] = 0
    return mask


def num_classes_of(owner: str, num_classes, least: int = 1) -> int:
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < least:
        raise InvalidArgument(f"{owner}: 'num_classes' should be at least {least}, got {num_classes!r}.",
                              hint="Pass the number of classes the labels and predictions range over.")
    return num_classes


class ConfusionMatrixMetric(Metric):
    """A metric computed from a num_classes × num_classes confusion matrix (see the module
    docstring); subclasses give `compute`."""

    def __init__(self, num_classes, ignore_classes=None, name=None, least_classes: int = 1):
        owner = name or type(self).__name__
        self.num_classes = num_classes_of(owner, num_classes, least_classes)
        self.mask = class_mask(owner, self.num_classes, ignore_classes)
        super().__init__(name=name or None)

    def reset(self) -> None:
        self.register_state("confusion_matrix", torch.zeros((self.num_classes, self.num_classes), dtype=SUM))
        self._dtype = None

    def update(self, labels, predictions, weights=None, dtype=None) -> None:
        inputs.tensors(self.name, labels=labels, predictions=predictions)
        inputs.same_shape(self.name, labels, predictions)
        inputs.weights_like(self.name, labels, weights)
        if process_backend.current().kind != "CSX":
            for what, values in (("labels", labels), ("predictions", predictions)):
                if values.numel() and bool(values.min() < 0):
                    raise InvalidArgument(f"{self.name}: negative values in `{what}` are not allowed.",
                                          hint=f"Classes are 0 … {self.num_classes - 1}.")
        counts_dtype = torch.int64 if predictions.dtype == torch.bool else predictions.dtype
        n = self.num_classes
        counts = torch.zeros(n * n, dtype=counts_dtype, device=predictions.device)
        ones = torch.ones(predictions.shape, dtype=counts_dtype, device=predictions.device)
        each = ones if weights is None else weights.to(counts_dtype)
        cells = (labels.to(torch.int64) * n + predictions.to(torch.int64)).flatten()
        counts.scatter_add_(0, cells, each.flatten())
        inputs.into(self.confusion_matrix, counts.reshape(n, n))
        self._dtype = dtype

    def _result(self, value: torch.Tensor) -> torch.Tensor:
        return value if self._dtype is None else value.to(self._dtype)

    def _parts(self):
        """(true positives per class, predicted per class, labelled per class, mask) in the state's
        dtype and device."""
        cm = self.confusion_matrix
        return cm.diagonal(), cm.sum(0), cm.sum(1), self.mask.to(cm.device)


def mean_over_valid(num: torch.Tensor, den: torch.Tensor) -> torch.Tensor:
    """The mean of num/den over the classes whose (masked) den is not 0; 0 when there is none."""
    valid = (den != 0).to(den.dtype).sum()
    ratios = divide_no_nan(num, torch.where(den > 0, den, torch.ones_like(den)))
    return torch.where(valid > 0, ratios.sum() / torch.where(valid > 0, valid, torch.ones_like(valid)),
                       torch.zeros_like(valid))
