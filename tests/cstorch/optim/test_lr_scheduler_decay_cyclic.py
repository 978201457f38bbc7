"""The real package's other schedules (decay.py, cyclic.py, ScalePerParamLR) against torch's
schedulers where they mean the same and against plain-Python formulas otherwise; param_group_tags,
get_last_lr, configure_lr_scheduler's names, and every refusal once."""

import inspect
import math

import pytest
import torch

from csadmin.cstorch.optim import SGD, configure_lr_scheduler
from csadmin.cstorch.optim.lr_scheduler import (ChainedLR, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts,
                                                CyclicLR, InverseExponentialTimeDecayLR, InverseSquareRootDecayLR,
                                                LambdaLR, LinearLR, LRScheduler, MultiplicativeLR, OneCycleLR,
                                                PiecewiseConstantLR, ScalePerParamLR, SequentialLR, StepLR)
from csadmin.errors import InvalidArgument
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401
from tests.cstorch.optim.test_lr_scheduler import _optimizer, _ours, _torchs

pytestmark = pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one


@pytest.mark.parametrize("ours, theirs, steps", [
    (lambda o: CosineAnnealingLR(o, 0.1, T_max=10, eta_min=0.01),
     lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=0.01), 45),
    (lambda o: CosineAnnealingWarmRestarts(o, 0.1, T_0=7, eta_min=0.002),
     lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=7, eta_min=0.002), 30),
    (lambda o: MultiplicativeLR(o, 0.1, coefficient=0.93),
     lambda o: torch.optim.lr_scheduler.MultiplicativeLR(o, lambda epoch: 0.93), 40),
    (lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=4, step_size_down=6),
     lambda o: torch.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 4, 6, cycle_momentum=False), 35),
    (lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=5, mode="triangular2"),
     lambda o: torch.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 5, mode="triangular2", cycle_momentum=False), 35),
    (lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.97),
     lambda o: torch.optim.lr_scheduler.CyclicLR(o, 0.01, 0.1, 3, mode="exp_range", gamma=0.97,
                                                 cycle_momentum=False), 35),
    (lambda o: OneCycleLR(o, 0.004, 0.1, total_steps=40),
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=40, div_factor=25.0, final_div_factor=1e4,
                                                   cycle_momentum=False), 40),
    (lambda o: OneCycleLR(o, 0.01, 0.1, total_steps=30, pct_start=0.25, final_div_factor=100, three_phase=True,
                          anneal_strategy="linear"),
     lambda o: torch.optim.lr_scheduler.OneCycleLR(o, 0.1, total_steps=30, pct_start=0.25, div_factor=10.0,
                                                   final_div_factor=100, three_phase=True, anneal_strategy="linear",
                                                   cycle_momentum=False), 30),
], ids=["CosineAnnealingLR", "CosineAnnealingWarmRestarts", "MultiplicativeLR", "CyclicLR-triangular",
        "CyclicLR-triangular2", "CyclicLR-exp_range", "OneCycleLR-cos", "OneCycleLR-three-phase-linear"])
def test_schedules_torch_has_too_give_torchs_rates(ours, theirs, steps):
    assert _ours(ours(_optimizer()), steps) == pytest.approx(_torchs(theirs, steps=steps), rel=1e-9, abs=1e-12)


def _cyclic_reference(s, base, top, up, down, scale):
    cycle = math.floor(1 + s / (up + down))
    x = 1 + s / (up + down) - cycle
    share = up / (up + down)
    return base + (top - base) * (x / share if x <= share else (x - 1) / (share - 1)) * scale(cycle, s)


def _one_cycle_reference(s, initial, top, total, pct, div):
    rise_end, low = pct * total - 1, initial / div
    if s <= rise_end:
        return top + (initial - top) / 2 * (math.cos(math.pi * s / rise_end) + 1)
    return low + (top - low) / 2 * (math.cos(math.pi * (s - rise_end) / (total - 1 - rise_end)) + 1)


@pytest.mark.parametrize("make, formula", [
    (lambda o: InverseExponentialTimeDecayLR(o, 0.1, step_exponent=2, total_iters=10, decay_rate=0.5),
     lambda s: 0.1 / (1 + 0.5 * s ** 2 / 10)),
    (lambda o: InverseExponentialTimeDecayLR(o, 0.1, step_exponent=1, total_iters=4, decay_rate=2.0, staircase=True),
     lambda s: 0.1 / (1 + 2.0 * (s // 4))),
    (lambda o: InverseSquareRootDecayLR(o, 0.5, scale=2.0, warmup_steps=9), lambda s: 0.5 * 2.0 / math.sqrt(max(s, 9))),
    (lambda o: InverseSquareRootDecayLR(o), lambda s: 1.0 / math.sqrt(max(s, 1))),
    (lambda o: CosineAnnealingWarmRestarts(o, 0.1, T_0=6, eta_min=0.01),
     lambda s: 0.01 + 0.09 * (1 + math.cos(math.pi * (s % 6) / 6)) / 2),
    (lambda o: MultiplicativeLR(o, 0.2, coefficient=1.05), lambda s: 0.2 * 1.05 ** s),
    (lambda o: LambdaLR(o, 0.5), lambda s: 0.5 * (s / 30) * 0.5 * 0.95 ** s),
    (lambda o: PiecewiseConstantLR(o, [0.1, 0.05, 0.01], milestones=[10, 25]),
     lambda s: 0.1 if s < 10 else 0.05 if s < 25 else 0.01),
    (lambda o: PiecewiseConstantLR(o, [0.1, 0.05], milestones=[10, 25]), lambda s: 0.1 if s < 10 else 0.05),
    (lambda o: CyclicLR(o, 0.02, 0.2, step_size_up=3, step_size_down=5, mode="exp_range", gamma=0.9),
     lambda s: _cyclic_reference(s, 0.02, 0.2, 3, 5, lambda cycle, step: 0.9 ** step)),
    (lambda o: CyclicLR(o, 0.02, 0.2, step_size_up=4, mode="triangular2"),
     lambda s: _cyclic_reference(s, 0.02, 0.2, 4, 4, lambda cycle, step: 1 / 2 ** (cycle - 1))),
    (lambda o: OneCycleLR(o, 0.01, 0.3, total_steps=40, pct_start=0.3, final_div_factor=50),
     lambda s: _one_cycle_reference(s, 0.01, 0.3, 40, 0.3, 50)),
], ids=["inverse-time", "inverse-time-staircase", "inverse-sqrt", "inverse-sqrt-defaults", "warm-restarts",
        "multiplicative", "lambda-default-pair", "piecewise", "piecewise-last-rate-runs-on", "cyclic-exp_range",
        "cyclic-triangular2", "one-cycle"])
def test_each_schedule_is_its_published_formula(make, formula):
    assert _ours(make(_optimizer())) == pytest.approx([formula(s) for s in range(40)], rel=1e-9, abs=1e-15)


def test_a_lambda_schedule_takes_the_functions_a_subclass_gives():
    class Halving(LambdaLR):
        def set_value_lambda(self):
            return [lambda step: torch.pow(0.5, step / 4)]

    assert _ours(Halving(_optimizer(), 0.8), 9) == pytest.approx([0.8 * 0.5 ** (s / 4) for s in range(9)])

    class Broken(LambdaLR):
        def set_value_lambda(self):
            return lambda step: step

    with pytest.raises(InvalidArgument, match=r"Broken.set_value_lambda\(\) returns a list of functions"):
        Broken(_optimizer(), 0.1)


def _tagged():
    a, b, c = (torch.nn.Parameter(torch.zeros(2)) for _ in range(3))
    return SGD([{"params": [a], "tags": {"decay", "body"}, "adjust_learning_rate": 0.5},
                {"params": [b], "tags": "head", "lr": 0.3},
                {"params": [c], "adjust_learning_rate": 4.0}], lr=0.7)


def test_param_group_tags_drive_only_the_tagged_groups_and_get_last_lr_says_so():
    optimizer = _tagged()
    body = StepLR(optimizer, 0.1, step_size=2, gamma=0.5, param_group_tags="body")
    head = CosineAnnealingLR(optimizer, 0.2, T_max=4, param_group_tags=["head", "nothing"])
    assert isinstance(body, torch.optim.lr_scheduler.LRScheduler)  # as the real class is
    for s in range(5):
        lrs = [float(group["lr"]) for group in optimizer.param_groups]
        assert lrs == pytest.approx([0.1 * 0.5 ** (s // 2), 0.1 * (1 + math.cos(math.pi * s / 4)), 0.7])
        body.step()
        head.step()
    last = body.get_last_lr()
    assert last[1:] == [None, None] and last[0].item() == pytest.approx(0.1 * 0.5 ** 2)
    assert body.get_last_value()[0].item() == last[0].item() and body.get_lr()[0].item() == pytest.approx(0.025)
    assert body.settings()["param_group_tags"] == ["body"]


def test_scale_per_param_scales_each_group_by_its_adjustment():
    optimizer = _tagged()
    scaled = ScalePerParamLR(optimizer, LinearLR(optimizer, 0.0, 0.1, total_iters=4))
    assert scaled.adjustment_scalars == [0.5, 1.0, 4.0]
    for s in range(6):
        assert [float(g["lr"]) for g in optimizer.param_groups] == pytest.approx(
            [a * 0.1 * min(s, 4) / 4 for a in (0.5, 1.0, 4.0)])
        scaled.step()
    assert scaled.settings()["schedulers"][0]["scheduler"] == "LinearLR" and scaled.parts()[0].total_iters == 4


def test_configure_lr_scheduler_finds_the_new_names():
    built = configure_lr_scheduler(_optimizer(), {"scheduler": "cosineannealingwarmrestarts",
                                                  "initial_learning_rate": 0.1, "T_0": 5})
    assert isinstance(built, CosineAnnealingWarmRestarts)
    assert isinstance(configure_lr_scheduler(_optimizer(), {"scheduler": "OneCycle", "initial_learning_rate": 0.01,
                                                            "max_lr": 0.1, "total_steps": 10}), OneCycleLR)
    sequence = configure_lr_scheduler(_optimizer(), [
        {"scheduler": "InverseExponentialTimeDecay", "initial_learning_rate": 0.1, "step_exponent": 1,
         "total_iters": 3, "decay_rate": 1.0},
        {"scheduler": "PiecewiseConstantLR", "learning_rates": [0.2, 0.3], "milestones": [2]}])
    assert isinstance(sequence, SequentialLR) and _ours(sequence, 6) == pytest.approx(
        [0.1, 0.075, 0.06, 0.2, 0.2, 0.3])


@pytest.mark.parametrize("make, message", [
    (lambda o: StepLR(o, 0.1, step_size=2, param_group_tags=["a", "a"]),
     r"StepLR: param_group_tags must be distinct tags; got \['a', 'a'\]"),
    (lambda o: ConstantLR(o, 0.1, param_group_tags="tail"),
     r"ConstantLR was given param_group_tags \['tail'\], but no param group .* Tags the groups have: "
     r"\['body', 'decay', 'head'\]"),
    (lambda o: SequentialLR(o, [ConstantLR(o, 0.1, param_group_tags="head"), ConstantLR(o, 0.2)], [3]),
     r"SequentialLR: schedulers\[0\] has param_group_tags \{'head'\}, not the SequentialLR's None"),
    (lambda o: ChainedLR(o, [ConstantLR(o, 0.1)], param_group_tags="body"),
     r"ChainedLR: schedulers\[0\] has param_group_tags None"),
    (lambda o: ScalePerParamLR(o, ConstantLR(o, 0.1), param_group_tags="head"),
     r"ScalePerParamLR: scheduler has param_group_tags None, not the ScalePerParamLR's \{'head'\}"),
    (lambda o: ScalePerParamLR(o, ConstantLR(_optimizer(), 0.1)), "ScalePerParamLR: scheduler schedules another"),
    (lambda o: ScalePerParamLR(o, 0.1), "ScalePerParamLR: scheduler is a float, not an LRScheduler"),
    (lambda o: InverseExponentialTimeDecayLR(o, 0.1, 1, 0, 0.5), "total_iters must be a whole number ≥ 1; got 0"),
    (lambda o: InverseExponentialTimeDecayLR(o, 0.1, "2", 5, 0.5), "step_exponent must be a number, not '2'"),
    (lambda o: InverseSquareRootDecayLR(o, warmup_steps=0), "warmup_steps must be above 0"),
    (lambda o: CosineAnnealingLR(o, 0.1, T_max=0), "CosineAnnealingLR: T_max must be above 0"),
    (lambda o: CosineAnnealingWarmRestarts(o, 0.1, T_0=5, T_mult=2),
     "T_mult 2 is not supported; the only supported T_mult is 1.0"),
    (lambda o: CosineAnnealingWarmRestarts(o, 0.1, T_0=0), "T_0 must be a whole number ≥ 1"),
    (lambda o: MultiplicativeLR(o, 0.1, coefficient=-0.5), "coefficient must be at least 0.0"),
    (lambda o: PiecewiseConstantLR(o, [0.1], milestones=[5, 9]), "2 milestones need 3 learning_rates"),
    (lambda o: PiecewiseConstantLR(o, [0.1, 0.2, 0.3], milestones=[9, 5]), r"milestones must increase; got \[9, 5\]"),
    (lambda o: PiecewiseConstantLR(o, [], milestones=[]), "learning_rates must be a non-empty list"),
    (lambda o: PiecewiseConstantLR(o, [0.1], milestones=5), "milestones must be a list of steps"),
    (lambda o: CyclicLR(o, 0.01, 0.1, mode="triangle"), "CyclicLR: mode must be one of 'triangular', 'triangular2'"),
    (lambda o: CyclicLR(o, 0.01, 0.1, scale_mode="epoch"), "scale_mode must be one of 'cycle', 'iterations'"),
    (lambda o: CyclicLR(o, 0.01, 0.1, step_size_up=0), "step_size_up must be a whole number ≥ 1"),
    (lambda o: OneCycleLR(o, 0.01, 0.1, anneal_strategy="exp"), "anneal_strategy must be one of 'cos', 'linear'"),
    (lambda o: OneCycleLR(o, 0.01, 0.1, pct_start=1.5), "pct_start must be at least 0.0, at most 1.0"),
    (lambda o: OneCycleLR(o, 0.01, 0.1, total_steps=3), r"with total_steps=3 and pct_start=0.3 a phase has no steps"),
    (lambda o: OneCycleLR(o, 0.01, 0.1, final_div_factor=0), "final_div_factor must be above 0"),
    (lambda o: configure_lr_scheduler(o, {"scheduler": "ScalePerParamLR"}), "wraps a built scheduler"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_each_refusal_says_what_is_wrong(make, message):
    optimizer = _tagged()
    with pytest.raises(InvalidArgument, match=message):
        make(optimizer)


def test_every_schedule_is_an_lr_scheduler_with_the_real_signature_tail():
    for cls in (InverseExponentialTimeDecayLR, InverseSquareRootDecayLR, PiecewiseConstantLR, CosineAnnealingLR,
                LambdaLR, CosineAnnealingWarmRestarts, MultiplicativeLR, CyclicLR, OneCycleLR, ScalePerParamLR):
        assert issubclass(cls, LRScheduler) and "param_group_tags" in inspect.signature(cls).parameters
    # The earlier schedules too, where scripts pass arguments by position.
    from csadmin.cstorch.optim.lr_scheduler import MultiStepLR, StepLR
    assert list(inspect.signature(MultiStepLR).parameters)[1:4] == ["initial_learning_rate", "gamma", "milestones"]
    assert list(inspect.signature(StepLR).parameters)[1:4] == ["initial_learning_rate", "step_size", "gamma"]
    assert list(inspect.signature(OneCycleLR).parameters)[1:] == [
        "initial_learning_rate", "max_lr", "total_steps", "pct_start", "final_div_factor", "three_phase",
        "anneal_strategy", "param_group_tags"]
