"""The library classes inside a real compile_step against csd: each optimizer and schedule, the
grad scaler skipping overflowing steps, metrics and the DataLoader, and a checkpoint saved in a
step closure resuming to the same weights: the replayed program gives exactly the numbers of the
same classes run eagerly (Python in the step runs only at capture, so any value not kept in a
tensor updated in place would freeze and show here)."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.metrics import AccuracyMetric, PerplexityMetric
from csadmin.cstorch.optim import lr_scheduler as schedules
from csadmin.cstorch.utils.data import DataLoader
from tests.cstorch.helpers import as_the_system, batches, configure, eagerly, model

CASES = {
    "SGD+StepLR": (lambda ps: cstorch.optim.SGD(ps, lr=0.1),
                   lambda o: schedules.StepLR(o, 0.1, step_size=3, gamma=0.5)),
    "SGD-nesterov+MultiStepLR": (
        lambda ps: cstorch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
        lambda o: schedules.MultiStepLR(o, 0.05, milestones=[2, 5, 9], gamma=0.5)),
    "SGD-dampening+ExponentialLR": (
        lambda ps: cstorch.optim.SGD(ps, lr=0.05, momentum=0.8, dampening=0.5),
        lambda o: schedules.ExponentialLR(o, 0.05, total_iters=4, decay_rate=0.5, staircase=True)),
    "Adam-amsgrad+PolynomialLR": (
        lambda ps: cstorch.optim.Adam(ps, lr=0.01, amsgrad=True, weight_decay=0.01),
        lambda o: schedules.PolynomialLR(o, 0.01, 0.001, total_iters=4, power=2.0, cycle=True)),
    "AdamW+ChainedLR": (
        lambda ps: cstorch.optim.AdamW(ps, lr=0.01),
        lambda o: schedules.ChainedLR(o, [schedules.ConstantLR(o, 0.01),
                                          schedules.CosineDecayLR(o, 1.0, 0.1, total_iters=8)])),
    "SGD+OneCycleLR-three-phase": (
        lambda ps: cstorch.optim.SGD(ps, lr=0.1, momentum=0.9),
        lambda o: schedules.OneCycleLR(o, 0.01, 0.1, total_steps=12, pct_start=0.25, three_phase=True)),
    "Adam+ScalePerParamLR(CyclicLR)": (
        lambda ps: cstorch.optim.Adam([{"params": list(ps), "adjust_learning_rate": 0.5}], lr=0.01),
        lambda o: schedules.ScalePerParamLR(o, schedules.CyclicLR(o, 0.001, 0.01, step_size_up=3,
                                                                  mode="exp_range", gamma=0.9))),
}


def _train_step(net, compiled, optimizer, scheduler, scaler=None):
    def step(x, y):
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        cstorch.amp.optimizer_step(loss, optimizer, scaler)
        scheduler.step()
        return loss
    return step


@pytest.mark.parametrize("case", list(CASES))
def test_each_optimizer_and_schedule_replays_as_its_eager_steps(ws_csd, tmp_path, case):
    make_optimizer, make_schedule = CASES[case]
    configure(ws_csd, tmp_path)
    net, eager_net = model(0), model(0)
    optimizer, eager_optimizer = make_optimizer(net.parameters()), make_optimizer(eager_net.parameters())
    scheduler, eager_scheduler = make_schedule(optimizer), make_schedule(eager_optimizer)
    step = cstorch.compile_step(_train_step(net, cstorch.compile(net, backend="wse_ws"), optimizer, scheduler))
    eager = eagerly(_train_step(eager_net, eager_net, eager_optimizer, eager_scheduler))
    for x, y in batches(12):
        assert torch.equal(step(x, y), eager(x, y))
        assert torch.equal(optimizer.param_groups[0]["lr"], eager_optimizer.param_groups[0]["lr"])
    for ours, theirs in zip(net.parameters(), eager_net.parameters()):
        assert torch.equal(ours, theirs)
    for ours, theirs in zip(optimizer.state.values(), eager_optimizer.state.values()):
        assert all(torch.equal(ours[name], theirs[name]) for name in ours)
    assert scheduler.last_epoch.item() == 12 and process_backend.current().run.step == 12


def test_the_grad_scaler_skips_overflowing_replayed_steps_as_eagerly(ws_csd, tmp_path):
    """Overflows on replayed steps (not at capture): the torch.where skip and the back-off are in
    the program, not in Python that ran once."""
    configure(ws_csd, tmp_path)
    net, eager_net = model(0), model(0)
    made = []
    for n in (net, eager_net):
        optimizer = cstorch.optim.Adam(n.parameters(), lr=0.01)
        made.append((optimizer, schedules.ConstantLR(optimizer, 0.01),
                     cstorch.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**8, steps_per_increase=6,
                                            min_loss_scale=1.0, max_loss_scale=2.0**10, overflow_tolerance=0.2)))
    (optimizer, scheduler, scaler), (eager_optimizer, eager_scheduler, eager_scaler) = made
    step = cstorch.compile_step(_train_step(net, cstorch.compile(net, backend="wse_ws"), optimizer, scheduler, scaler))
    eager = eagerly(_train_step(eager_net, eager_net, eager_optimizer, eager_scheduler, eager_scaler))
    scales = []
    for i, (x, y) in enumerate(batches(16)):
        if i in (4, 5, 9):
            x = x.clone()
            x[0, 0] = float("inf")
        before = [p.detach().clone() for p in net.parameters()]
        assert torch.equal(step(x, y).isnan(), eager(x, y).isnan())
        skipped = all(torch.equal(a, b) for a, b in zip(before, net.parameters()))
        assert skipped == (i in (4, 5, 9))
        assert torch.equal(scaler.get_scale(), eager_scaler.get_scale())
        scales.append(scaler.get_scale().item())
        for ours, theirs in zip(net.parameters(), eager_net.parameters()):
            assert torch.equal(ours, theirs)
    # step 5: 1 overflow in 5 steps is not above the 20 % tolerance: skipped, the scale kept; step 6:
    # 2 in 6, halved; step 10: 1 in 4 since, halved; steps 11-16: 6 clean steps, doubled.
    assert scales == [256] * 5 + [128] * 4 + [64] * 6 + [128]


def test_metrics_accumulate_in_an_eval_step_and_only_the_final_value_reads(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model(0)
    compiled = cstorch.compile(net, backend="wse_ws")
    compiled.eval()
    accuracy = AccuracyMetric("accuracy", compute_on_system=True)
    perplexity = PerplexityMetric("perplexity", compute_on_system=True)
    with pytest.raises(errors.InvalidState, match="compute_on_system=False: for weight streaming mode"):
        AccuracyMetric("host", compute_on_system=False)
    data = batches(6)
    loader = DataLoader(lambda: data, num_steps=6)

    @cstorch.compile_step
    def evaluation_step(x, y):
        outputs = compiled(x)
        loss = torch.nn.functional.cross_entropy(outputs, y)
        accuracy(labels=y.clone(), predictions=outputs.argmax(-1).int())
        perplexity(labels=y, loss=loss * y.numel())  # the batch's total loss, as the real package adds it
        return loss

    with torch.no_grad():
        for i, (x, y) in enumerate(loader):
            evaluation_step(x, y)
            if i == 2:
                with pytest.raises(errors.InvalidState, match="read after step 3 of 6: Eval metrics are only allowed"):
                    float(accuracy)
    with torch.no_grad(), as_the_system():  # plain PyTorch with the step's numerics
        outputs = [net(x) for x, _ in data]
        correct = sum((o.argmax(-1) == y).sum().item() for o, (_, y) in zip(outputs, data))
        mean_loss = sum(torch.nn.functional.cross_entropy(o, y).item() for o, (_, y) in zip(outputs, data)) / 6
    assert float(accuracy) == correct / (6 * 32)
    assert float(perplexity) == pytest.approx(torch.exp(torch.tensor(mean_loss, dtype=torch.float64)).item(),
                                              rel=1e-6)


def test_reading_a_metric_inside_the_step_is_refused(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(net := model(0), backend="wse_ws")
    compiled.eval()
    accuracy = AccuracyMetric("accuracy")

    @cstorch.compile_step
    def evaluation_step(x, y):
        accuracy(labels=y, predictions=compiled(x).argmax(-1))
        return accuracy.compute()

    with torch.no_grad(), pytest.raises(errors.InvalidState, match="'accuracy' was read inside a step"):
        evaluation_step(*batches(1)[0])
    assert net is not None


def test_the_dataloader_refuses_a_short_batch_before_the_step_runs(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model(0)
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)
    step = cstorch.compile_step(_train_step(net, cstorch.compile(net, backend="wse_ws"), optimizer,
                                            schedules.ConstantLR(optimizer, 0.1)))
    x, y = torch.cat([b[0] for b in batches(3)]), torch.cat([b[1] for b in batches(3)])
    loader = DataLoader(lambda: torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x[:80], y[:80]),
                                                            batch_size=32), num_steps=5)
    ran = 0
    with pytest.raises(errors.ReprogramForbidden, match="batch 3 has size 16, the first batch had 32"):
        for xb, yb in loader:
            step(xb, yb)
            ran += 1
    assert ran == 2 and process_backend.current().run.step == 2


def _everything(seed):
    net = model(seed)
    optimizer = cstorch.optim.configure_optimizer("AdamW", net.parameters(), lr=0.01)
    scheduler = cstorch.optim.configure_lr_scheduler(optimizer, {"scheduler": "CosineDecayLR",
                                                                 "initial_learning_rate": 0.01,
                                                                 "end_learning_rate": 0.0, "total_iters": 6})
    scaler = cstorch.amp.GradScaler(loss_scale="dynamic", steps_per_increase=2)
    return net, optimizer, scheduler, scaler


def test_a_checkpoint_saved_in_a_step_closure_resumes_to_the_same_weights(ws_csd, tmp_path):
    data = batches(6)
    configure(ws_csd, tmp_path / "first", checkpoint_steps=3)
    net, optimizer, scheduler, scaler = _everything(0)
    step = cstorch.compile_step(_train_step(net, cstorch.compile(net, backend="wse_ws"), optimizer, scheduler, scaler))

    @cstorch.step_closure
    def save_checkpoint(at):
        cstorch.save({"model": net.state_dict(), "optimizer": optimizer.state_dict(),
                      "lr_scheduler": scheduler.state_dict(), "grad_scaler": scaler.state_dict(),
                      "global_step": at}, tmp_path / f"checkpoint_{at}.mdl")

    for i, batch in enumerate(DataLoader(lambda: data, num_steps=6), 1):
        step(*batch)
        if i % 3 == 0:
            save_checkpoint(i)
    final = [p.detach().clone() for p in net.parameters()]

    process_backend.reset()  # a new process, as a resumed job would be
    configure(ws_csd, tmp_path / "second", checkpoint_steps=3)
    net, optimizer, scheduler, scaler = _everything(1)
    saved = cstorch.load(tmp_path / "checkpoint_3.mdl")
    net.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["lr_scheduler"])
    scaler.load_state_dict(saved["grad_scaler"])
    assert saved["global_step"] == 3
    step = cstorch.compile_step(_train_step(net, cstorch.compile(net, backend="wse_ws"), optimizer, scheduler, scaler))
    for batch in DataLoader(lambda: data[3:], num_steps=3):
        step(*batch)
    for ours, theirs in zip(net.parameters(), final):
        assert torch.equal(ours, theirs)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_a_torch_lr_scheduler_inside_the_step_is_refused(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model(0)
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)
    torch_schedule = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    compiled = cstorch.compile(net, backend="wse_ws")

    @cstorch.compile_step
    def step(x, y):
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        cstorch.amp.optimizer_step(loss, optimizer, None)
        torch_schedule.step()
        return loss

    with pytest.raises(errors.InvalidState, match="vanilla PyTorch learning rate schedulers are not compatible "
                                                  "with traced lazy execution"):
        step(*batches(1)[0])
    assert optimizer.param_groups[0]["lr"] == 0.1
