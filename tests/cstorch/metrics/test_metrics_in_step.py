"""Metrics written the later releases' way inside a traced eval step, against a real csd: a
script's own Metric subclass and the built-in segmentation metrics in a DataExecutor's run give
what the same metrics give computed eagerly with the system's numerics; their state is updated in
place by the captured program; and the rules hold inside such a run."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from tests.cstorch.helpers import as_the_system, batches, model
from tests.cstorch.v2 import csx, input_fn

STEPS = 4


class ProbabilityError(cstorch.metrics.Metric):
    """A script's own metric, as the real documentation writes one: the mean absolute difference
    between the predicted probability of class 1 and the label."""

    def reset(self):
        self.register_state("total", torch.tensor(0, dtype=torch.float32))
        self.register_state("count", torch.tensor(0, dtype=torch.float32))

    def update(self, outputs, labels):
        probability = outputs.float().softmax(-1)[:, 1]
        self.total.add_((probability - labels).abs().sum())
        self.count.add_(labels.numel())

    def compute(self):
        return self.total / self.count


def _metrics():
    return (ProbabilityError("probability_error"), cstorch.metrics.DiceCoefficientMetric(2),
            cstorch.metrics.MeanIOUMetric(2, ignore_classes=[0]), cstorch.metrics.FBetaScoreMetric(2, beta=2.0))


def _step_body(compiled, metrics):
    error, dice, iou, fbeta = metrics

    def eval_step(batch):
        inputs, targets = batch
        outputs = compiled(inputs)
        predictions = outputs.argmax(-1)
        dice(labels=targets, predictions=predictions)
        iou(labels=targets, predictions=predictions)
        fbeta(labels=targets, predictions=predictions)
        return error(outputs, targets)  # forward: the running value, the step's tensor

    return eval_step


def _eagerly(net, numerics):
    """The same metrics, fresh, over the same batches in plain PyTorch; the running values of the
    custom one after each batch."""
    metrics = _metrics()
    running = []
    with torch.no_grad(), numerics():
        for inputs, targets in batches(STEPS, seed=1):
            running.append(_step_body(net, metrics)((inputs, targets)).item())
    return metrics, running


def test_custom_and_builtin_metrics_in_a_traced_eval_step_are_their_eager_values(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    with backend.device:
        net = model(3)
    compiled = cstorch.compile(net, backend)
    compiled.eval()
    metrics = _metrics()
    error = metrics[0]
    state_before = error.total
    step = cstorch.trace(_step_body(compiled, metrics))
    running = []

    @cstorch.step_closure
    def record(value):
        running.append(value.item())

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=STEPS)
    with torch.no_grad():
        for i, batch in enumerate(executor, 1):
            record(step(batch))
            if i == 2:
                with pytest.raises(errors.InvalidState, match=f"read after step 2 of {STEPS}: Eval metrics"):
                    float(error)
    program = cstorch.backend().run.program
    assert any(t is state_before for t in program.state)  # the program updates the metric's own tensor
    assert error.total is state_before
    assert dict(cstorch.metrics.compute_all_metrics()) == {m.name: float(m) for m in metrics}

    expected, expected_running = _eagerly(net, as_the_system)
    assert running == expected_running  # the step's tensor is the running value after each step
    for ours, theirs in zip(metrics, expected):
        assert float(ours) == float(theirs), ours.name
        assert torch.equal(ours.compute(), theirs.compute())
    assert torch.equal(metrics[1].confusion_matrix, expected[1].confusion_matrix)
    # The step is traced once per run on the system: one update counted, as the real package counts.
    assert [m.num_updates for m in metrics] == [1] * 4


def test_a_metric_the_step_never_updates_cannot_be_computed_on_csx(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    with backend.device:
        net = model(3)
    compiled = cstorch.compile(net, backend)
    compiled.eval()
    used, unused = cstorch.metrics.AccuracyMetric("used"), cstorch.metrics.AccuracyMetric("unused")

    @cstorch.trace
    def eval_step(batch):
        inputs, targets = batch
        return used(labels=targets, predictions=compiled(inputs).argmax(-1))

    with torch.no_grad():
        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=2):
            eval_step(batch)
    with torch.no_grad(), as_the_system():
        correct = sum((net(x).argmax(-1) == y).sum().item() for x, y in batches(2, seed=1))
    assert float(used) == correct / 64
    with pytest.raises(errors.InvalidState, match="Trying to compute metric `unused`, but the metric has not been "
                                                  "updated. This is currently not supported when running on CSX."):
        dict(cstorch.metrics.compute_all_metrics())


def test_on_the_cpu_backend_every_step_updates_eagerly(tmp_path):
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    with backend.device:
        net = model(3)
    compiled = cstorch.compile(net, backend)
    compiled.eval()
    metrics = _metrics()
    step = cstorch.trace(_step_body(compiled, metrics))
    with torch.no_grad():
        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=STEPS):
            step(batch)
    expected, _ = _eagerly(net, torch.no_grad)  # the CPU backend computes in the model's own precision
    assert [m.num_updates for m in metrics] == [STEPS] * 4
    assert [float(m) for m in metrics] == [float(m) for m in expected]
