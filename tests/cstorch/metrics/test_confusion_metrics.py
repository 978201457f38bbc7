"""DiceCoefficientMetric, MeanIOUMetric and FBetaScoreMetric against the same quantities computed
by hand with numpy from the batches (a confusion matrix counted in a loop, each formula written
per class), and their refusals."""

import numpy as np
import pytest
import torch

from csadmin.cstorch.metrics import DiceCoefficientMetric, FBetaScoreMetric, MeanIOUMetric
from csadmin.errors import InvalidArgument

CLASSES = 4


def _batches(seed: int, n: int = 5):
    """Segmentation-shaped batches (2 × 3 × 5 labels) where class 3 is never labelled nor predicted."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        labels = torch.randint(0, 3, (2, 3, 5), generator=g)
        noisy = torch.randint(0, 3, (2, 3, 5), generator=g)
        keep = torch.rand(2, 3, 5, generator=g) < 0.6
        mask = (torch.rand(2, 3, 5, generator=g) < 0.8).float()
        out.append((labels, torch.where(keep, labels, noisy), mask))
    return out


def _matrix(batches, weighted: bool) -> np.ndarray:
    cm = np.zeros((CLASSES, CLASSES))
    for labels, predictions, mask in batches:
        for t, p, w in zip(labels.flatten().tolist(), predictions.flatten().tolist(), mask.flatten().tolist()):
            cm[t, p] += w if weighted else 1
    return cm


def _mean(per_class: dict) -> float:
    return sum(per_class.values()) / len(per_class) if per_class else 0.0


def _dice(cm, ignore=()) -> float:
    scores = {}
    for c in range(CLASSES):
        tp, fp, fn = cm[c, c], cm[:, c].sum() - cm[c, c], cm[c, :].sum() - cm[c, c]
        if c not in ignore and 2 * tp + fp + fn > 0:
            scores[c] = 2 * tp / (2 * tp + fp + fn)
    return _mean(scores)


def _iou(cm, ignore=()) -> float:
    scores = {}
    for c in range(CLASSES):
        tp, fp, fn = cm[c, c], cm[:, c].sum() - cm[c, c], cm[c, :].sum() - cm[c, c]
        if c not in ignore and tp + fp + fn > 0:
            scores[c] = tp / (tp + fp + fn)
    return _mean(scores)


def _ratio(a, b) -> float:
    return a / b if b else 0.0


def _f(precision, recall, beta) -> float:
    return _ratio((1 + beta ** 2) * precision * recall, beta ** 2 * precision + recall)


def _fbeta(cm, beta, average, ignore=()) -> float:
    kept = [c for c in range(CLASSES) if c not in ignore]
    if average == "micro":
        tp = sum(cm[c, c] for c in kept)
        return _f(_ratio(tp, sum(cm[:, c].sum() for c in kept)), _ratio(tp, sum(cm[c, :].sum() for c in kept)), beta)
    return sum(_f(_ratio(cm[c, c], cm[:, c].sum()), _ratio(cm[c, c], cm[c, :].sum()), beta) for c in kept) / len(kept)


@pytest.mark.parametrize("ignore", [None, [0]])
def test_dice_and_mean_iou_are_the_hand_computed_means(ignore):
    batches = _batches(1)
    dice, iou = DiceCoefficientMetric(CLASSES, ignore_classes=ignore), MeanIOUMetric(CLASSES, ignore, name="miou")
    weighted = DiceCoefficientMetric(CLASSES, ignore, name="weighted_dice")
    for labels, predictions, mask in batches:
        dice(labels=labels, predictions=predictions)
        iou(labels, predictions)
        weighted(labels, predictions, weights=mask)
    skip = ignore or ()
    assert (dice.name, iou.name) == ("DiceCoefficientMetric", "miou")
    assert float(dice) == pytest.approx(_dice(_matrix(batches, False), skip), rel=1e-12)
    assert float(iou) == pytest.approx(_iou(_matrix(batches, False), skip), rel=1e-12)
    assert float(weighted) == pytest.approx(_dice(_matrix(batches, True), skip), rel=1e-12)
    np.testing.assert_array_equal(dice.confusion_matrix.numpy(), _matrix(batches, False))


@pytest.mark.parametrize("beta, average", [(1.0, "micro"), (0.5, "micro"), (2.0, "macro"), (1.0, "macro")])
def test_fbeta_is_the_hand_computed_score(beta, average):
    batches = _batches(2)
    score = FBetaScoreMetric(CLASSES, beta=beta, average_type=average)
    ignoring = FBetaScoreMetric(CLASSES, beta=beta, average_type=average, ignore_labels=[1], name="f_ignoring")
    for labels, predictions, _ in batches:
        score(labels=labels, predictions=predictions)
        ignoring(labels=labels, predictions=predictions)
    cm = _matrix(batches, False)
    assert float(score) == pytest.approx(_fbeta(cm, beta, average), rel=1e-12)
    assert float(ignoring) == pytest.approx(_fbeta(cm, beta, average, ignore=(1,)), rel=1e-12)
    if average == "micro":  # every token is predicted once and labelled once: micro F is the accuracy
        correct = sum((lab == pred).sum().item() for lab, pred, _ in batches)
        assert float(score) == pytest.approx(correct / (5 * 30), rel=1e-12)


def test_empty_classes_and_the_result_dtype():
    dice = DiceCoefficientMetric(3)
    dice(labels=torch.tensor([2, 2]), predictions=torch.tensor([2, 2]), dtype=torch.float32)
    value = dice.compute()
    assert value.dtype == torch.float32 and value.item() == 1.0  # classes 0 and 1 never appear: not counted
    nothing = MeanIOUMetric(2)
    nothing(labels=torch.tensor([1]), predictions=torch.tensor([1]), weights=torch.tensor([0.0]))
    assert float(nothing) == 0.0  # no class counted at all


def test_refusals():
    with pytest.raises(InvalidArgument, match="'num_classes' should be at least 2, got 1"):
        FBetaScoreMetric(1)
    with pytest.raises(InvalidArgument, match="'beta' should be a positive number, got 0"):
        FBetaScoreMetric(3, beta=0)
    with pytest.raises(InvalidArgument, match=r"The average_type has to be one of \['micro', 'macro'\], got 'mean'"):
        FBetaScoreMetric(3, average_type="mean")
    with pytest.raises(InvalidArgument, match="'num_classes' should be at least 1, got 0"):
        MeanIOUMetric(0)
    with pytest.raises(InvalidArgument, match=r"class ids in \[0, 3\); got \[3\]"):
        DiceCoefficientMetric(3, ignore_classes=[3])
    dice = DiceCoefficientMetric(3)
    with pytest.raises(InvalidArgument, match=r"mismatched shapes of \(2,\) and \(3,\)"):
        dice(labels=torch.zeros(2, dtype=torch.long), predictions=torch.zeros(3, dtype=torch.long))
    with pytest.raises(InvalidArgument, match="weights must be a tensor of the labels' shape"):
        dice(labels=torch.zeros(2, dtype=torch.long), predictions=torch.zeros(2, dtype=torch.long),
             weights=torch.ones(3))
    with pytest.raises(InvalidArgument, match="negative values in `labels` are not allowed"):
        dice(labels=torch.tensor([-1, 0]), predictions=torch.tensor([0, 0]))
    assert dice.num_updates == 0

