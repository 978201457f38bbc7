"""The optimizers beyond SGD and Adam inside a real compile_step against csd, a StepLR schedule
driving their learning rate: the replayed program takes the steps torch.optim takes eagerly, or,
where torch.optim has no such optimizer (Lamb, Lion, Adafactor) or computes it otherwise (NAdam:
the real class's divisor), the steps of a plain eager reference written here from the published
algorithm as the real class computes it. The eager side runs with the system's numerics
(as_the_system: float16 products, float32 weights), so the two differ only in rounding."""

import math

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend import process_backend
from tests.cstorch import optim_references as references
from tests.cstorch.helpers import as_the_system, batches, configure, model

STEPS = 8
LR, STEP_SIZE, GAMMA = 0.02, 3, 0.5  # the schedule: lr 0.02, halved every 3 steps

# name: (ours, its torch.optim twin, the arguments both take; eps given where the defaults differ)
TORCH_TWINS = {
    "ASGD": (cstorch.optim.ASGD, torch.optim.ASGD, dict(lambd=0.01, alpha=0.5, t0=3, weight_decay=0.01)),
    "Adadelta": (cstorch.optim.Adadelta, torch.optim.Adadelta, dict(rho=0.8, weight_decay=0.01)),
    "Adagrad": (cstorch.optim.Adagrad, torch.optim.Adagrad, dict(lr_decay=0.05, initial_accumulator_value=0.1,
                                                                  eps=1e-10)),
    "Adamax": (cstorch.optim.Adamax, torch.optim.Adamax, dict(betas=(0.8, 0.99), eps=1e-8, weight_decay=0.01)),
    "RAdam": (cstorch.optim.RAdam, torch.optim.RAdam, dict(betas=(0.8, 0.9), eps=1e-8)),
    "RMSprop": (cstorch.optim.RMSprop, torch.optim.RMSprop, dict(momentum=0.5, centered=True, weight_decay=0.01)),
    "Rprop": (cstorch.optim.Rprop, torch.optim.Rprop, dict(etas=(0.4, 1.3), step_sizes=(1e-4, 0.05))),
}


def _compiled(ws_csd, tmp_path, make_optimizer, more_schedules=lambda optimizer: ()):
    """A compiled training step of model(0) with `make_optimizer`, a StepLR and the schedulers
    `more_schedules(optimizer)` makes, stepped after it; and its optimizer."""
    configure(ws_csd, tmp_path)
    net = model(0)
    optimizer = make_optimizer(net.parameters())
    scheduler = cstorch.optim.lr_scheduler.StepLR(optimizer, LR, step_size=STEP_SIZE, gamma=GAMMA)
    schedules = [scheduler, *more_schedules(optimizer)]
    compiled = cstorch.compile(net, backend="wse_ws")

    @cstorch.compile_step
    def training_step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        for schedule in schedules:
            schedule.step()
        return loss

    for x, y in batches(STEPS):
        training_step(x, y)
    assert process_backend.current().run.step == STEPS
    return net, optimizer


def _eager(step_parameters):
    """model(0) trained eagerly on the same batches: `step_parameters(params, lr)` updates them."""
    reference = model(0)
    params = list(reference.parameters())
    for i, (x, y) in enumerate(batches(STEPS)):
        with as_the_system():
            for p in params:
                p.grad = None
            torch.nn.functional.cross_entropy(reference(x), y).backward()
        with torch.no_grad():
            step_parameters(params, LR * GAMMA ** (i // STEP_SIZE))
    return reference


def _assert_same(net, reference):
    for ours, theirs in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=1e-5, atol=1e-6)
    assert any(not torch.equal(p, q) for p, q in zip(net.parameters(), model(0).parameters()))  # it moved


@pytest.mark.parametrize("name", list(TORCH_TWINS))
def test_the_compiled_step_takes_torch_optims_steps(ws_csd, tmp_path, name):
    ours, theirs, kwargs = TORCH_TWINS[name]
    net, _ = _compiled(ws_csd, tmp_path, lambda ps: ours(ps, lr=LR, **kwargs))
    reference = model(0)
    torch_optimizer = theirs(reference.parameters(), lr=LR, **kwargs)
    torch_schedule = torch.optim.lr_scheduler.StepLR(torch_optimizer, STEP_SIZE, GAMMA)
    for x, y in batches(STEPS):
        with as_the_system():
            torch_optimizer.zero_grad()
            torch.nn.functional.cross_entropy(reference(x), y).backward()
            torch_optimizer.step()
            torch_schedule.step()
    _assert_same(net, reference)


REFERENCES = {
    "NAdam": (lambda ps: cstorch.optim.NAdam(ps, lr=LR, betas=(0.8, 0.99), momentum_decay=0.01),
              lambda: references.nadam(betas=(0.8, 0.99), momentum_decay=0.01)),
    "Lion": (lambda ps: cstorch.optim.Lion(ps, lr=LR, betas=(0.8, 0.95), weight_decay=0.1),
             lambda: references.lion(betas=(0.8, 0.95), weight_decay=0.1)),
    "Lamb": (lambda ps: cstorch.optim.Lamb(ps, lr=LR, weight_decay=0.01), lambda: references.lamb(weight_decay=0.01)),
    "Adafactor": (lambda ps: cstorch.optim.Adafactor(ps, lr=LR, weight_decay=0.01),
                  lambda: references.adafactor(weight_decay=0.01)),
}


@pytest.mark.parametrize("name", list(REFERENCES))
def test_the_compiled_step_takes_the_published_algorithms_steps(ws_csd, tmp_path, name):
    make_optimizer, make_reference = REFERENCES[name]
    net, _ = _compiled(ws_csd, tmp_path, make_optimizer)
    _assert_same(net, _eager(make_reference()))


def test_nadams_momentum_divisor_is_the_real_classs_not_torchs(ws_csd, tmp_path):
    """The one place the real NAdam departs from torch.optim.NAdam (torch ≤ 1.12's divisor): the
    compiled step follows the real class, and it is not torch's."""
    net, _ = _compiled(ws_csd, tmp_path, lambda ps: cstorch.optim.NAdam(ps, lr=LR))
    reference = model(0)
    torch_nadam = torch.optim.NAdam(reference.parameters(), lr=LR)
    torch_schedule = torch.optim.lr_scheduler.StepLR(torch_nadam, STEP_SIZE, GAMMA)
    for x, y in batches(STEPS):
        with as_the_system():
            torch_nadam.zero_grad()
            torch.nn.functional.cross_entropy(reference(x), y).backward()
            torch_nadam.step()
            torch_schedule.step()
    gap = max((a - b).abs().max().item() for a, b in zip(net.parameters(), reference.parameters()))
    assert gap > 1e-4 and math.isfinite(gap)
    _assert_same(net, _eager(references.nadam()))


def test_a_scheduled_weight_decay_replays_in_the_compiled_step(ws_csd, tmp_path):
    """cstorch.optim.weight_decay_scheduler beside the StepLR: the captured program reads the
    weight decay tensor the schedule writes each step, down to 0, as torch's AdamW takes the same
    decays set by hand."""
    net, _ = _compiled(ws_csd, tmp_path, lambda params: cstorch.optim.AdamW(params, lr=LR, weight_decay=0.5),
                       lambda optimizer: [cstorch.optim.weight_decay_scheduler.LinearWD(optimizer, 0.5, 0.0,
                                                                                        total_iters=4)])
    reference = model(0)
    twin = torch.optim.AdamW(reference.parameters(), lr=LR, weight_decay=0.5)
    twin_schedule = torch.optim.lr_scheduler.StepLR(twin, STEP_SIZE, GAMMA)
    for i, (x, y) in enumerate(batches(STEPS)):
        with as_the_system():
            twin.zero_grad()
            torch.nn.functional.cross_entropy(reference(x), y).backward()
        twin.param_groups[0]["weight_decay"] = 0.5 * max(0.0, 1 - i / 4)
        twin.step()
        twin_schedule.step()
    _assert_same(net, reference)
