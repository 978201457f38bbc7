"""The schedules against torch.optim.lr_scheduler where they mean the same, and against their closed
forms where they do not; configure_lr_scheduler's three forms and its refusals."""

import math

import pytest
import torch

from csadmin.cstorch.optim import SGD, Adam, configure_lr_scheduler
from csadmin.cstorch.optim.lr_scheduler import (ChainedLR, ChainedScheduler, ConstantLR, CosineDecayLR, ExponentialLR,
                                                LinearLR, LRScheduler, MultiStepLR, PolynomialLR, SequentialLR, StepLR)
from csadmin.errors import InvalidArgument
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401

pytestmark = pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one

STEPS = 40


def _optimizer(lr=0.1):
    return SGD(torch.nn.Linear(2, 2).parameters(), lr=lr)


def _ours(scheduler, steps=STEPS):
    lrs = []
    for _ in range(steps):
        lrs.append(scheduler.optimizer.param_groups[0]["lr"].item())
        scheduler.step()
    return lrs


def _torchs(make, lr=0.1, steps=STEPS):
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 2).parameters(), lr=lr)
    scheduler = make(optimizer)
    lrs = []
    for _ in range(steps):
        lrs.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return lrs


@pytest.mark.parametrize("ours, theirs", [
    (lambda o: StepLR(o, 0.1, step_size=7, gamma=0.5), lambda o: torch.optim.lr_scheduler.StepLR(o, 7, 0.5)),
    (lambda o: MultiStepLR(o, 0.1, milestones=[5, 12, 30], gamma=0.3),
     lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [5, 12, 30], 0.3)),
    (lambda o: ExponentialLR(o, 0.1, total_iters=1, decay_rate=0.9),
     lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.9)),
    (lambda o: LinearLR(o, 0.05, 0.1, total_iters=10),
     lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.5, end_factor=1.0, total_iters=10)),
    (lambda o: PolynomialLR(o, 0.1, 0.0, total_iters=25, power=2.0),
     lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=25, power=2.0)),
    (lambda o: ConstantLR(o, 0.1), lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda s: 1.0)),
], ids=["StepLR", "MultiStepLR", "ExponentialLR", "LinearLR", "PolynomialLR", "ConstantLR"])
def test_schedules_torch_has_too_give_torchs_rates(ours, theirs):
    assert _ours(ours(_optimizer())) == pytest.approx(_torchs(theirs), rel=1e-12, abs=1e-15)


def test_cosine_decay_is_torchs_cosine_annealing_until_its_end_then_holds():
    ours = _ours(CosineDecayLR(_optimizer(), 0.1, 0.01, total_iters=20))
    theirs = _torchs(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=20, eta_min=0.01))
    assert ours[:21] == pytest.approx(theirs[:21], rel=1e-9) and ours[20:] == pytest.approx([0.01] * 20)


@pytest.mark.parametrize("make, formula", [
    (lambda o: ExponentialLR(o, 0.2, total_iters=10, decay_rate=0.5, staircase=True),
     lambda s: 0.2 * 0.5 ** (s // 10)),
    (lambda o: ExponentialLR(o, 0.2, total_iters=10, decay_rate=0.5), lambda s: 0.2 * 0.5 ** (s / 10)),
    (lambda o: PolynomialLR(o, 0.1, 0.02, total_iters=15, power=0.5),
     lambda s: (0.1 - 0.02) * (1 - min(s, 15) / 15) ** 0.5 + 0.02),
    (lambda o: PolynomialLR(o, 0.1, 0.02, total_iters=15, power=2.0, cycle=True),
     lambda s: (0.1 - 0.02) * (1 - s / (15 * max(1, math.ceil(s / 15)))) ** 2 + 0.02),
    (lambda o: LinearLR(o, 0.0, 0.3, total_iters=8), lambda s: 0.3 * min(s, 8) / 8),
    (lambda o: SequentialLR(o, [LinearLR(o, 0.0, 0.1, 10), CosineDecayLR(o, 0.1, 0.0, 20), ConstantLR(o, 0.005)],
                            milestones=[10, 30]),
     lambda s: 0.01 * s if s < 10 else 0.05 * (1 + math.cos(math.pi * (s - 10) / 20)) if s < 30 else 0.005),
    (lambda o: ChainedLR(o, [ConstantLR(o, 0.1), StepLR(o, 2.0, step_size=10, gamma=0.5),
                             ExponentialLR(o, 1.0, total_iters=20, decay_rate=0.25)]),
     lambda s: 0.1 * 0.5 ** (s // 10) * 0.25 ** (s / 20)),
    # 2.x's form: the schedulers alone (the optimizer is theirs), also under torch's name
    (lambda o: ChainedLR([ConstantLR(o, 0.1), StepLR(o, 2.0, step_size=10, gamma=0.5)]),
     lambda s: 0.1 * 0.5 ** (s // 10)),
    (lambda o: ChainedScheduler(schedulers=[ConstantLR(o, 0.1), ExponentialLR(o, 1.0, total_iters=20,
                                                                              decay_rate=0.25)]),
     lambda s: 0.1 * 0.25 ** (s / 20)),
], ids=["exponential-staircase", "exponential", "polynomial", "polynomial-cycle", "linear", "sequential",
        "chained", "chained-2x", "chained-scheduler"])
def test_each_schedule_is_its_closed_form(make, formula):
    assert _ours(make(_optimizer())) == pytest.approx([formula(s) for s in range(STEPS)], rel=1e-9, abs=1e-15)


def test_step_writes_the_same_lr_tensor_in_place_and_the_optimizer_reads_it():
    model = torch.nn.Linear(2, 1, bias=False)
    optimizer = SGD(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, 0.5, step_size=1, gamma=0.5)
    lr = optimizer.param_groups[0]["lr"]
    for expected in (0.5, 0.25, 0.125):
        before = model.weight.detach().clone()
        model.weight.grad = torch.ones_like(model.weight)
        optimizer.step()
        assert torch.allclose(before - model.weight, torch.full_like(before, expected))
        scheduler.step()
    assert optimizer.param_groups[0]["lr"] is lr and scheduler.last_epoch.item() == 3
    assert [t.item() for t in scheduler.get_last_lr()] == [0.0625]


def test_state_dict_resumes_the_schedule_and_the_optimizer_keeps_its_tensor():
    optimizer = _optimizer()
    scheduler = CosineDecayLR(optimizer, 0.1, 0.0, total_iters=10)
    for _ in range(4):
        scheduler.step()
    twin_optimizer = _optimizer()
    twin = CosineDecayLR(twin_optimizer, 0.1, 0.0, total_iters=10)
    lr = twin_optimizer.param_groups[0]["lr"]
    twin.load_state_dict(scheduler.state_dict())
    assert twin_optimizer.param_groups[0]["lr"] is lr and _ours(twin, 6) == _ours(scheduler, 6)
    with pytest.raises(InvalidArgument, match="'last_epoch'"):
        twin.load_state_dict({})


def test_a_custom_schedule_needs_its_closed_form():
    class Halving(LRScheduler):
        def __init__(self, optimizer, total_iters):
            super().__init__(optimizer, total_iters=total_iters)

        def _get_closed_form_lr(self):
            return 0.8 * torch.pow(0.5, self.last_epoch / self.total_iters)

    assert _ours(Halving(_optimizer(), 4), 9) == pytest.approx([0.8 * 0.5 ** (s / 4) for s in range(9)])

    class Open(LRScheduler):
        pass

    with pytest.raises(TypeError, match="_get_closed_form_lr"):
        Open(_optimizer())


def test_configure_lr_scheduler_takes_the_documents_three_forms():
    constant = configure_lr_scheduler(_optimizer(), 0.02)
    assert isinstance(constant, ConstantLR) and _ours(constant, 3) == pytest.approx([0.02] * 3)
    one = configure_lr_scheduler(_optimizer(), {"scheduler": "StepLR", "initial_learning_rate": 0.1,
                                                "step_size": 2, "gamma": 0.5})
    assert isinstance(one, StepLR) and _ours(one, 5) == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025])
    optimizer = _optimizer()
    sequence = configure_lr_scheduler(optimizer, [
        {"scheduler": "Linear", "initial_learning_rate": 0.0, "end_learning_rate": 0.1, "total_iters": 2},
        {"scheduler": "constantlr", "learning_rate": 0.1, "total_iters": 3},
        {"scheduler": "ExponentialLR", "initial_learning_rate": 0.1, "decay_rate": 0.5, "total_iters": 1},
    ])
    assert isinstance(sequence, SequentialLR) and sequence.milestones == [2, 5]
    assert _ours(sequence, 8) == pytest.approx([0.0, 0.05, 0.1, 0.1, 0.1, 0.1, 0.05, 0.025])
    chained = configure_lr_scheduler(_optimizer(), [
        {"scheduler": "ConstantLR", "learning_rate": 0.1},
        {"scheduler": "StepLR", "initial_learning_rate": 1.0, "step_size": 1, "gamma": 0.5,
         "main_scheduler": "ChainedLR"},
    ])
    assert isinstance(chained, ChainedLR) and _ours(chained, 3) == pytest.approx([0.1, 0.05, 0.025])


@pytest.mark.parametrize("learning_rate, message", [
    ("fast", "Cannot configure a learning rate from 'fast': learning_rate is a number"),
    (True, "Cannot configure a learning rate from True"),
    ([], r"Cannot configure a learning rate from \[\]"),
    ({"initial_learning_rate": 0.1}, "has no key 'scheduler' naming the schedule. Valid schedulers: ChainedLR, "),
    ({"scheduler": "Warmup"}, "Unknown scheduler 'Warmup'. Valid schedulers: "),
    ({"scheduler": "StepLR", "initial_learning_rate": 0.1}, "StepLR needs step_size"),
    ({"scheduler": "StepLR", "initial_learning_rate": 0.1, "step_size": 2, "decay": 1},
     "StepLR does not take 'decay'; it takes initial_learning_rate, step_size, gamma, param_group_tags, "
     "last_epoch"),
    ({"scheduler": "LinearLR", "initial_learning_rate": 0.1, "end_learning_rate": 0, "total_iters": 0},
     "LinearLR: total_iters must be a whole number ≥ 1; got 0"),
    ({"scheduler": "CosineDecayLR", "initial_learning_rate": -1, "end_learning_rate": 0, "total_iters": 5},
     "initial_learning_rate must be at least 0.0; got -1.0"),
    ({"scheduler": "SequentialLR"}, "names SequentialLR: give its parts as a list of dicts"),
    ([{"scheduler": "ConstantLR", "learning_rate": 0.1}, {"scheduler": "ConstantLR", "learning_rate": 0.2}],
     r"learning_rate\[0\] has no total_iters: each scheduler of a SequentialLR says how many steps it runs"),
    ([{"scheduler": "ConstantLR", "learning_rate": 0.1}, 0.2], r"learning_rate\[1\] is a float, not a dict"),
    ([{"scheduler": "ConstantLR", "learning_rate": 0.1, "main_scheduler": "Parallel"}],
     r"main_scheduler \['Parallel'\] is not ChainedLR or SequentialLR"),
    ([{"scheduler": "ConstantLR", "learning_rate": 0.1, "main_scheduler": "ChainedLR"},
      {"scheduler": "ConstantLR", "learning_rate": 0.0}], r"ChainedLR: schedulers\[1\] starts at learning rate 0"),
    ({"scheduler": "MultiStepLR", "initial_learning_rate": 0.1, "gamma": 0.5, "milestones": 5}, "milestones must be a non-empty"),
])
def test_a_malformed_configuration_is_a_clear_error(learning_rate, message):
    with pytest.raises(InvalidArgument, match=message):
        configure_lr_scheduler(_optimizer(), learning_rate)


def test_a_schedule_drives_adam_like_torchs_scheduler_drives_torchs_adam():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(4, 2), torch.nn.Linear(4, 2)
    b.load_state_dict(a.state_dict())
    ours = Adam(a.parameters(), lr=0.1)
    ours_schedule = StepLR(ours, 0.1, step_size=3, gamma=0.5)
    theirs = torch.optim.Adam(b.parameters(), lr=0.1)
    theirs_schedule = torch.optim.lr_scheduler.StepLR(theirs, 3, 0.5)
    for _ in range(10):
        batch = torch.randn(8, 4)
        for model, optimizer, schedule in ((a, ours, ours_schedule), (b, theirs, theirs_schedule)):
            optimizer.zero_grad()
            model(batch).pow(2).mean().backward()
            optimizer.step()
            schedule.step()
    torch.testing.assert_close(a.weight, b.weight, rtol=1e-5, atol=1e-6)
    with pytest.raises(InvalidArgument, match="takes no epoch"):
        ours_schedule.step(3)


def test_last_epoch_resumes_the_schedule_after_that_step():
    assert _ours(StepLR(_optimizer(), 0.1, step_size=2, gamma=0.5, last_epoch=3), 3) == pytest.approx(
        [0.025, 0.025, 0.0125])
    for bad in (-2, 1.5, "3"):
        with pytest.raises(InvalidArgument, match="last_epoch must be a whole number ≥ -1"):
            StepLR(_optimizer(), 0.1, step_size=2, last_epoch=bad)
    with pytest.raises(InvalidArgument, match="StepLR schedules an optimizer; got a Linear"):
        StepLR(torch.nn.Linear(1, 1), 0.1, step_size=2)
