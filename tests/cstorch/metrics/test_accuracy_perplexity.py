"""cstorch.metrics: the values plain PyTorch computes, the weight-streaming rule for
compute_on_system, and only the final value readable."""

import math

import pytest
import torch

from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.metrics import AccuracyMetric, PerplexityMetric
from csadmin.errors import InvalidArgument, InvalidState
from tests.cstorch.run_state import fresh_run  # noqa: F401


def test_accuracy_is_plain_pytorchs_over_all_batches():
    torch.manual_seed(0)
    accuracy = AccuracyMetric("accuracy", compute_on_system=True)
    correct = total = 0
    for _ in range(7):
        labels, outputs = torch.randint(0, 5, (33,)), torch.randn(33, 5)
        accuracy(labels=labels.clone(), predictions=outputs.argmax(-1).int())
        correct += (outputs.argmax(-1) == labels).sum().item()
        total += labels.numel()
    assert float(accuracy) == correct / total
    # weights: a mask counts only the tokens of positive weight; other weights scale the correct ones and
    # still count each such token once (the real package's sum(correct * w) / count(w > 0)).
    weighted = AccuracyMetric("weighted")
    weighted(labels=torch.tensor([1, 2, 3, 4]), predictions=torch.tensor([1, 0, 3, 0]),
             weights=torch.tensor([1., 1., 1., 0.]))
    assert float(weighted) == 2 / 3
    weighted(labels=torch.tensor([1, 2]), predictions=torch.tensor([1, 2]), weights=torch.tensor([0.5, 2.]))
    assert float(weighted) == (2 + 0.5 + 2) / (3 + 2)
    weighted.reset()
    weighted(labels=torch.tensor([1]), predictions=torch.tensor([1]))
    assert float(weighted) == 1.0


def test_perplexity_is_exp_of_the_mean_loss_per_token():
    """`loss` is the batch's total loss (the real package adds it as given); the tokens are every
    label, or those of positive weight."""
    perplexity = PerplexityMetric("perplexity", compute_on_system=True)
    perplexity(labels=torch.zeros(2, 5), loss=torch.tensor(2.0) * 10)
    mask = torch.ones(3, 10)
    mask[:, 7:] = 0  # 21 tokens of 30
    perplexity(labels=torch.zeros(3, 10), loss=torch.tensor(1.0) * 21, weights=mask)
    assert float(perplexity) == pytest.approx(math.exp((2.0 * 10 + 1.0 * 21) / 31), rel=1e-12)


def test_compute_on_system_false_is_refused_in_weight_streaming(fresh_run):
    AccuracyMetric("eager", compute_on_system=False)  # no compile yet: fine
    pipelined = AccuracyMetric("pipelined", compute_on_system=False)
    late = AccuracyMetric("late", compute_on_system=False)
    fresh_run.execmode = "PIPELINED"
    pipelined(labels=torch.ones(2), predictions=torch.ones(2))
    fresh_run.execmode = "WEIGHT_STREAMING"
    with pytest.raises(InvalidState, match="Metric 'ws' has compute_on_system=False: for weight streaming mode, "
                                           "compute_on_system must be set to true"):
        AccuracyMetric("ws", compute_on_system=False)
    with pytest.raises(InvalidState, match="'late' has compute_on_system=False"):
        late(labels=torch.ones(2), predictions=torch.ones(2))
    AccuracyMetric("ws", compute_on_system=True)(labels=torch.ones(2), predictions=torch.ones(2))


def test_only_the_final_value_is_readable(fresh_run):
    accuracy = AccuracyMetric("accuracy")
    fresh_run.execmode, fresh_run.run.last_step = "WEIGHT_STREAMING", 10
    with process_backend.current().stepping():
        accuracy(labels=torch.ones(4), predictions=torch.ones(4))
        with pytest.raises(InvalidState, match="'accuracy' was read inside a step: Eval metrics are only allowed "
                                               "to return a single result value"):
            float(accuracy)
    fresh_run.run.step = 4
    with pytest.raises(InvalidState, match="read after step 4 of 10: .*only the final metric value can be read"):
        accuracy.compute()
    fresh_run.run.step = 10
    assert float(accuracy) == 1.0


def test_bad_arguments_are_refused():
    with pytest.raises(InvalidArgument, match="non-empty string"):
        AccuracyMetric("")
    with pytest.raises(InvalidArgument, match="compute_on_system is True or False"):
        AccuracyMetric("a", compute_on_system="yes")
    with pytest.raises(InvalidArgument, match="labels and predictions are tensors of one shape"):
        AccuracyMetric("a")(labels=torch.ones(3), predictions=torch.ones(4))
    with pytest.raises(InvalidArgument, match="weights must be a tensor of the labels' shape"):
        AccuracyMetric("a")(labels=torch.ones(3), predictions=torch.ones(3), weights=torch.ones(2))
    with pytest.raises(InvalidArgument, match="loss a one-element tensor"):
        PerplexityMetric("p")(labels=torch.ones(3), loss=torch.ones(3))
