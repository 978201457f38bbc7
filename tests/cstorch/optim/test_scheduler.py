"""The generic schedules (cstorch.optim.scheduler) and the weight decay's
(cstorch.optim.weight_decay_scheduler): each drives its own param-group key, the learning rate's
and the weight decay's schedules are the same closed forms under their families' names, and an
optimizer reads a scheduled weight decay at every step as torch.optim reads a number set by hand."""

import inspect
import typing

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.optim import scheduler as generic
from csadmin.cstorch.optim import weight_decay_scheduler as wd
from csadmin.cstorch.optim.lr_scheduler import LRScheduler
from csadmin.errors import InvalidArgument
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401

pytestmark = pytest.mark.usefixtures("configured")

STEPS = 12


def _net(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(4, 3)


def _values(schedule, steps=STEPS, key=None):
    key = key or schedule.param_group_key
    seen = []
    for _ in range(steps):
        seen.append(schedule.optimizer.param_groups[0][key].item())
        schedule.step()
    return seen


def test_every_lr_and_wd_schedule_is_a_generic_scheduler_of_its_key():
    optimizer = cstorch.optim.SGD(_net().parameters(), lr=0.1, weight_decay=0.01)
    lr = cstorch.optim.lr_scheduler.CosineDecayLR(optimizer, 0.1, 0.01, total_iters=10)
    decay = wd.CosineDecayWD(optimizer, initial_val=0.1, end_val=0.01, total_iters=10)
    assert isinstance(lr, generic.Scheduler) and isinstance(lr, generic.CosineDecayScheduler)
    assert isinstance(decay, wd.WeightDecayScheduler) and isinstance(decay, generic.CosineDecayScheduler)
    assert (lr.param_group_key, decay.param_group_key) == ("lr", "weight_decay")
    assert _values(lr, 10) == pytest.approx(_values(decay, 10))  # the same closed form
    assert lr.initial_learning_rate == lr.initial_val == 0.1  # the family's name reads the generic one
    assert lr.settings()["initial_learning_rate"] == 0.1 and decay.settings()["initial_val"] == 0.1


def test_sequentials_and_piecewise_constants_are_the_generic_ones():
    """ModelZoo tells a SequentialLR from a PiecewiseConstantLR by these classes (it computes the
    milestones of the first from its parts)."""
    lrs = cstorch.optim.lr_scheduler
    assert issubclass(lrs.SequentialLR, generic.SequentialScheduler)
    assert issubclass(lrs.PiecewiseConstantLR, generic.PiecewiseConstantScheduler)
    assert issubclass(lrs.ChainedLR, generic.ChainedScheduler) and issubclass(wd.ChainedWD, generic.ChainedScheduler)
    optimizer = cstorch.optim.AdamW(_net().parameters(), lr=0.1, weight_decay=0.5)
    steps = wd.PiecewiseConstantWD(optimizer, vals=[0.5, 0.2, 0.1], milestones=[3, 7])
    assert _values(steps, 9) == pytest.approx([0.5] * 3 + [0.2] * 4 + [0.1] * 2)
    assert [type(part).__name__ for part in steps.parts()] == ["ConstantWD"] * 3


def test_the_signatures_are_the_real_ones_with_real_annotations():
    """ModelZoo builds a pydantic config class from each schedule's signature: the optimizer is
    annotated with torch's Optimizer class itself (which it maps to 'given by the trainer'), and
    parts with the family's base class, so no annotation may be a string."""
    for module in (cstorch.optim.lr_scheduler, wd):
        for name in module.__all__:
            cls = getattr(module, name)
            for parameter in inspect.signature(cls.__init__).parameters.values():
                assert not isinstance(parameter.annotation, str), (name, parameter.name)
    assert inspect.signature(wd.CosineDecayWD).parameters.keys() >= {"initial_val", "end_val", "total_iters"}
    sequential = inspect.signature(cstorch.optim.lr_scheduler.SequentialLR).parameters
    assert sequential["optimizer"].annotation is torch.optim.Optimizer
    assert typing.get_args(sequential["schedulers"].annotation) == (LRScheduler,)
    assert list(inspect.signature(wd.PiecewiseConstantWD).parameters) == [
        "optimizer", "vals", "milestones", "param_group_tags"]


def test_a_part_of_another_key_or_family_is_refused():
    optimizer = cstorch.optim.SGD(_net().parameters(), lr=0.1, weight_decay=0.01)
    lr_part = cstorch.optim.lr_scheduler.ConstantLR(optimizer, 0.1, total_iters=3)
    wd_part = wd.ConstantWD(optimizer, 0.01)
    with pytest.raises(InvalidArgument, match=r"SequentialWD: schedulers\[0\] schedules 'lr', not the SequentialWD's "
                                              r"'weight_decay'"):
        wd.SequentialWD(optimizer, [lr_part, wd_part], milestones=[3])
    with pytest.raises(InvalidArgument, match=r"ScalePerParamWD: scheduler is a float, not a WeightDecayScheduler"):
        wd.ScalePerParamWD(optimizer, 0.5)


def test_an_lr_and_a_wd_schedule_drive_their_own_keys_of_the_same_groups():
    optimizer = cstorch.optim.AdamW(_net().parameters(), lr=0.1, weight_decay=0.2)
    lr = cstorch.optim.lr_scheduler.StepLR(optimizer, 0.1, step_size=2, gamma=0.5)
    decay = wd.LinearWD(optimizer, initial_val=0.2, end_val=0.0, total_iters=4)
    seen = []
    for _ in range(5):
        group = optimizer.param_groups[0]
        seen.extend((group["lr"].item(), group["weight_decay"].item()))
        lr.step()
        decay.step()
    assert seen == pytest.approx([0.1, 0.2, 0.1, 0.15, 0.05, 0.1, 0.05, 0.05, 0.025, 0.0])  # (lr, wd) per step
    assert decay.get_last_value()[0].item() == pytest.approx(0.0)


def test_a_wd_schedule_resumes_from_its_state_dict():
    optimizer = cstorch.optim.SGD(_net().parameters(), lr=0.1, weight_decay=0.1)
    decay = wd.ExponentialWD(optimizer, initial_val=0.1, total_iters=1, decay_rate=0.5)
    for _ in range(3):
        decay.step()
    twin_optimizer = cstorch.optim.SGD(_net().parameters(), lr=0.1, weight_decay=0.1)
    twin = wd.ExponentialWD(twin_optimizer, initial_val=0.1, total_iters=1, decay_rate=0.5)
    value = twin_optimizer.param_groups[0]["weight_decay"]
    twin.load_state_dict(decay.state_dict())
    assert twin_optimizer.param_groups[0]["weight_decay"] is value and value.item() == pytest.approx(0.0125)


@pytest.mark.parametrize("ours, theirs, kwargs", [
    (cstorch.optim.SGD, torch.optim.SGD, dict(momentum=0.9)),
    (cstorch.optim.AdamW, torch.optim.AdamW, dict()),
    (cstorch.optim.RMSprop, torch.optim.RMSprop, dict(momentum=0.5)),
    (cstorch.optim.Adagrad, torch.optim.Adagrad, dict(eps=1e-6)),
], ids=["SGD", "AdamW", "RMSprop", "Adagrad"])
def test_a_scheduled_weight_decay_is_what_torch_takes_set_by_hand(ours, theirs, kwargs):
    """Each step reads the group's weight decay tensor as written that step (0 at the end
    included: a scheduled decay is applied with no branch on its value)."""
    net, reference = _net(), _net()
    x, y = torch.randn(16, 4, generator=torch.Generator().manual_seed(3)), torch.arange(16) % 3
    optimizer = ours(net.parameters(), lr=0.05, weight_decay=0.3, **kwargs)
    schedule = wd.LinearWD(optimizer, initial_val=0.3, end_val=0.0, total_iters=5)
    twin = theirs(reference.parameters(), lr=0.05, weight_decay=0.3, **kwargs)
    for step in range(8):
        for model, opt in ((net, optimizer), (reference, twin)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
        twin.param_groups[0]["weight_decay"] = 0.3 * max(0.0, 1 - step / 5)
        optimizer.step()
        twin.step()
        schedule.step()
    for p, q in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


def test_adams_scheduled_weight_decay_is_its_decoupled_term():
    """Adam keeps torch's `weight_decay` as its L2 rate (`l2_regularization_rate`) and its own
    `weight_decay` at 0, as the real class does: a weight decay schedule drives the decoupled
    term, so Adam(weight_decay=0) under one steps as torch's AdamW with that decay by hand."""
    net, reference = _net(), _net()
    x, y = torch.randn(16, 4, generator=torch.Generator().manual_seed(3)), torch.arange(16) % 3
    optimizer = cstorch.optim.Adam(net.parameters(), lr=0.05)
    schedule = wd.CosineDecayWD(optimizer, initial_val=0.2, end_val=0.05, total_iters=4)
    twin = torch.optim.AdamW(reference.parameters(), lr=0.05)
    for _ in range(6):
        for model, opt in ((net, optimizer), (reference, twin)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
        twin.param_groups[0]["weight_decay"] = optimizer.param_groups[0]["weight_decay"].item()
        optimizer.step()
        twin.step()
        schedule.step()
    assert optimizer.param_groups[0]["l2_regularization_rate"] == 0.0
    for p, q in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)
