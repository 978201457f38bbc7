"""cstorch.metrics.MeanMetric (ModelZoo's DPO model logs its rewards with it): the weighted mean
of every value since the last reset, eagerly and inside a traced eval step on CSX."""

import math

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.metrics import MeanMetric
from tests.cstorch.helpers import model
from tests.cstorch.v2 import csx, input_fn


def test_the_mean_of_numbers_and_tensors_with_their_weights():
    mean = MeanMetric(name="eval/rewards")
    assert mean.name == "eval/rewards" and MeanMetric().name == "MeanMetric"
    mean(torch.tensor(2.0))
    mean(4)
    mean(torch.tensor([1.0, 3.0]), weight=torch.tensor([0.5, 1.5]))  # each element with its weight
    assert float(mean) == (2 + 4 + 0.5 + 4.5) / (1 + 1 + 2)
    mean(torch.ones(2, 3), weight=2.0)  # one weight, broadcast to the value's shape
    assert float(mean) == (11 + 12) / (4 + 12)
    assert mean.compute().dtype == torch.float64
    mean.update(0.0, dtype=torch.float32)
    assert mean.compute().dtype == torch.float32
    mean.reset()
    assert math.isnan(mean.compute().item())  # no weight yet: 0/0
    mean(torch.tensor(7.0, dtype=torch.bfloat16))
    assert float(mean) == 7.0


def test_bad_values_and_weights_are_refused():
    mean = MeanMetric(name="refusals")
    with pytest.raises(errors.InvalidArgument, match="does not broadcast"):
        mean(torch.ones(3), weight=torch.ones(2))
    with pytest.raises(errors.InvalidArgument, match="value must be a number or a tensor"):
        mean("1.0")
    with pytest.raises(errors.InvalidArgument, match="weight must be a number or a tensor"):
        mean(1.0, weight=[1.0])


def test_in_a_traced_eval_step_on_csx_it_is_the_eager_mean(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    with backend.device:
        net = model(3)
    compiled = cstorch.compile(net, backend)
    compiled.eval()
    mean = MeanMetric(name="eval/top_probability")

    @cstorch.trace
    def eval_step(batch):
        inputs, _ = batch
        top = compiled(inputs).float().softmax(-1).amax(-1)
        mean(top.mean())
        return top.mean()

    tops = []

    @cstorch.step_closure
    def record(value):
        tops.append(value.item())

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=4)
    with torch.no_grad():
        for batch in executor:
            record(eval_step(batch))
    assert len(tops) == 4
    assert float(mean) == pytest.approx(sum(tops) / 4, rel=1e-6)  # float32 step values, float64 sums
