"""R1.8's summaries against a real csd: cstorch.scalar_summary inside the step (every step's
value) and outside it (the step's result), written by cstorch.save_summaries to the script's own
SummaryWriter at the step it names, read back with tensorboard's EventAccumulator; and
cstorch.metrics.compute_all_metrics() after an evaluation run."""

from __future__ import annotations

import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from torch.utils.tensorboard import SummaryWriter

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import as_the_system, batches, configure, model, run_record

STEPS = 12


def scalars(log_dir) -> dict:
    acc = EventAccumulator(str(log_dir))
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_scalar_summaries_in_and_after_the_step_reach_tensorboard_at_the_steps_saved(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))  # the script's own writer, never closed

    @cstorch.compile_step
    def training_step(x, y):
        loss = loss_fn(compiled(x), y)
        optimizer.zero_grad()
        loss.backward()
        grad_norm = torch.sqrt(sum(torch.sum(p.grad.float() ** 2) for p in net.parameters()))
        cstorch.scalar_summary("grad_norm", grad_norm)  # part of the program: every step's value
        optimizer.step()
        cstorch.scalar_summary("weight_sum", net[0].weight.sum())  # read at the end of the step: updated
        return loss

    @cstorch.step_closure
    def post_training_step(step):
        cstorch.save_summaries(writer, step)

    seen = {}
    loader = cstorch.utils.data.DataLoader(lambda: batches(4), num_steps=STEPS)
    for step, (x, y) in enumerate(loader, 1):
        loss = training_step(x, y)
        cstorch.scalar_summary("loss", loss)  # outside: this step's result
        post_training_step(step)
        seen[step] = (loss.item(), net[0].weight.sum().item(),
                      torch.sqrt(sum(torch.sum(p.grad ** 2) for p in net.parameters())).item())

    got = scalars(tmp_path / "tb")
    assert sorted(got) == ["grad_norm", "loss", "weight_sum"]
    for tag in got:
        assert [s for s, _ in got[tag]] == list(range(1, STEPS + 1)), tag
    for step, (loss, weight_sum, grad_norm) in seen.items():
        assert got["loss"][step - 1][1] == pytest.approx(loss, rel=1e-6)
        assert got["weight_sum"][step - 1][1] == pytest.approx(weight_sum, rel=1e-6)
        assert got["grad_norm"][step - 1][1] == pytest.approx(grad_norm, rel=1e-5)
    assert process_backend.current().run.scalars == {}  # written once: nothing pending
    assert run_record(ws_csd)["totalSamples"] == STEPS * 32


def test_a_summary_of_a_constant_made_in_the_step_is_each_steps_own(ws_csd, tmp_path):
    """The vendor runner's parameter norm: `torch.tensor(0.0).to(model.device)` accumulated in
    place inside the step. The constant starts from 0.0 on every step (it did not carry over)."""
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))

    @cstorch.compile_step
    def eval_step(x):
        norm = torch.tensor(0.0).to(net.device)
        for _, param in compiled.named_parameters():
            norm += torch.pow(torch.norm(param), 2.0)
        cstorch.scalar_summary("params_norm", torch.sqrt(norm))
        return compiled(x).sum()

    with torch.no_grad():
        for step, (x, _) in enumerate(batches(3), 1):
            eval_step(x)
            cstorch.save_summaries(writer, step)
    with as_the_system():
        expected = torch.sqrt(sum(torch.pow(torch.norm(p), 2.0) for p in net.parameters())).item()
    got = scalars(tmp_path / "tb")["params_norm"]
    assert [s for s, _ in got] == [1, 2, 3]
    assert all(value == pytest.approx(expected, rel=1e-6) for _, value in got), got


def test_save_summaries_is_refused_inside_the_step_and_bad_summaries_are_refused(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(model(), backend="wse_ws")
    writer = SummaryWriter(log_dir=str(tmp_path / "tb"))

    @cstorch.compile_step
    def step(x):
        out = compiled(x)
        cstorch.save_summaries(writer, 1)
        return out

    with pytest.raises(errors.InvalidState, match="save_summaries was called inside a compile_step function") as exc:
        step(batches(1)[0][0])
    assert "step_closure" in exc.value.hint
    with pytest.raises(errors.InvalidArgument, match=r"the tensor has shape \(2,\); a scalar summary is one value"):
        cstorch.scalar_summary("x", torch.ones(2))
    with pytest.raises(errors.InvalidArgument, match="name must be a non-empty string"):
        cstorch.scalar_summary("", torch.ones(()))
    with pytest.raises(errors.InvalidArgument, match="not a SummaryWriter"):
        cstorch.save_summaries("runs/", 1)
    with pytest.raises(errors.InvalidArgument, match="step must be a whole number"):
        cstorch.save_summaries(writer, -1)


def test_compute_all_metrics_gives_every_metrics_final_value_by_name(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    accuracy = cstorch.metrics.AccuracyMetric("accuracy")
    perplexity = cstorch.metrics.PerplexityMetric("perplexity")
    loss_fn = torch.nn.CrossEntropyLoss()

    @cstorch.compile_step
    def eval_step(x, y):
        out = compiled(x)
        loss = loss_fn(out, y)
        accuracy(labels=y, predictions=out.argmax(-1))
        perplexity(labels=y, loss=loss)
        return loss

    data = batches(3)
    loader = cstorch.utils.data.DataLoader(lambda: data)
    with torch.no_grad():
        for x, y in loader:
            eval_step(x, y)
    values = cstorch.metrics.compute_all_metrics()
    pairs = [(name, value) for name, value in values]  # the vendor runner's loop
    assert [name for name, _ in pairs] == ["accuracy", "perplexity"]
    assert dict(values) == {"accuracy": float(accuracy), "perplexity": float(perplexity)}
    with as_the_system():
        correct = sum((net(x).argmax(-1) == y).sum().item() for x, y in data)
    assert dict(values)["accuracy"] == correct / 96
    assert run_record(ws_csd)["mode"] == "eval"


def test_metrics_read_as_both_releases_read_them(fresh_metrics):
    """R1.8's runner iterates compute_all_metrics() as (name, value) pairs; later scripts call
    .items() on it or index it; get_all_metrics() gives (name, metric), a shared name numbered."""
    first, second, other = fresh_metrics
    values = cstorch.metrics.compute_all_metrics()
    assert [pair for pair in values] == list(values.items()) == [("acc.0", 0.5), ("acc.1", 1.0), ("ppl", 1.0)]
    assert values["ppl"] == 1.0 and dict(values) == {"acc.0": 0.5, "acc.1": 1.0, "ppl": 1.0}
    assert list(cstorch.metrics.get_all_metrics()) == [("acc.0", first), ("acc.1", second), ("ppl", other)]


@pytest.fixture
def fresh_metrics():  # on the fresh backend of conftest's autouse fixture
    first, second = cstorch.metrics.AccuracyMetric("acc"), cstorch.metrics.AccuracyMetric("acc")
    other = cstorch.metrics.PerplexityMetric("ppl")
    first(labels=torch.tensor([1, 0]), predictions=torch.tensor([1, 1]))
    second(labels=torch.tensor([1]), predictions=torch.tensor([1]))
    other(labels=torch.tensor([1, 1]), loss=torch.tensor(0.0))
    return first, second, other
