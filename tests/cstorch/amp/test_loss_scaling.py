"""cstorch.amp: dynamic loss scaling step by step against torch.amp.GradScaler (tolerance 0 is
torch's rule), overflow_tolerance, skipped steps leaving no trace, static scaling, optimizer_step,
and mixed precision."""

import pytest
import torch

from csadmin.cstorch import amp
from csadmin.cstorch.optim import SGD, Adam
from csadmin.errors import InvalidArgument
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401

pytestmark = pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))


def _loss(model, step):
    torch.manual_seed(100 + step)
    x = torch.randn(8, 4)
    if step in (3, 4, 9):  # an overflow, as half precision would make one
        x[0, 0] = float("inf")
    return model(x).pow(2).mean()


def test_dynamic_scaling_with_no_tolerance_follows_torchs_grad_scaler():
    ours_model, torch_model = _model(), _model()
    ours = Adam(ours_model.parameters(), lr=0.01)
    theirs = torch.optim.Adam(torch_model.parameters(), lr=0.01)
    scaler = amp.GradScaler(loss_scale="dynamic", init_scale=2.0**10, steps_per_increase=3,
                            min_loss_scale=1.0, max_loss_scale=2.0**20, overflow_tolerance=0.0)
    torch_scaler = torch.amp.GradScaler("cpu", init_scale=2.0**10, growth_interval=3)
    scales = []
    for step in range(14):
        amp.optimizer_step(_loss(ours_model, step), ours, scaler)
        theirs.zero_grad()
        torch_scaler.scale(_loss(torch_model, step)).backward()
        torch_scaler.step(theirs)
        torch_scaler.update()
        scales.append((scaler.get_scale().item(), torch_scaler.get_scale()))
        for x, y in zip(ours_model.parameters(), torch_model.parameters()):
            torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)
    assert all(a == b for a, b in scales), scales
    assert [a for a, _ in scales] == [1024, 1024, 2048, 1024, 512, 512, 512, 1024, 1024, 512, 512, 512, 1024, 1024]


def test_a_skipped_step_leaves_the_parameters_and_the_optimizer_state_untouched():
    model = _model()
    adam = Adam(model.parameters(), lr=0.1)
    scaler = amp.GradScaler(loss_scale="dynamic")
    amp.optimizer_step(_loss(model, 0), adam, scaler)
    weights = [p.detach().clone() for p in model.parameters()]
    state = [t.clone() for s in adam.state.values() for t in s.values()]
    amp.optimizer_step(_loss(model, 3), adam, scaler)  # inf in the batch: NaN gradients
    assert all(torch.equal(a, b) for a, b in zip(weights, model.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(state, (t for s in adam.state.values() for t in s.values())))
    assert scaler.get_scale().item() == 2.0**14  # halved from the default 2**15


def test_overflow_tolerance_backs_off_only_when_the_fraction_of_overflows_exceeds_it():
    model = torch.nn.Linear(1, 1)
    sgd = SGD(model.parameters(), lr=0.0)
    scaler = amp.GradScaler(loss_scale="dynamic", init_scale=64.0, steps_per_increase=10**6,
                            overflow_tolerance=0.1)

    def step(overflow):
        model.weight.grad = torch.full_like(model.weight, float("nan") if overflow else 1.0)
        model.bias.grad = torch.ones_like(model.bias)
        scaler.step(sgd)
        scaler.update()
        return scaler.get_scale().item()

    assert step(True) == 32  # 1 of 1 steps overflowed: > 10 %
    assert [step(False) for _ in range(9)] == [32] * 9
    assert step(True) == 32  # 1 of 10 since the last change: not above 10 %
    assert step(True) == 16  # 2 of 11
    for _ in range(20):
        step(False)
    assert step(True) == 16 and step(True) == 16 and step(True) == 8  # 1/21, 2/22, 3/23 > 10 %


def test_the_scale_grows_after_steps_per_increase_clean_steps_within_its_bounds():
    model = torch.nn.Linear(1, 1)
    sgd = SGD(model.parameters(), lr=0.0)
    scaler = amp.GradScaler(loss_scale="dynamic", init_scale=4.0, steps_per_increase=2, min_loss_scale=2.0,
                            max_loss_scale=16.0, overflow_tolerance=0.0)
    scales = []
    for overflow in [False] * 8 + [True] * 4:
        model.weight.grad = torch.full_like(model.weight, float("inf") if overflow else 1.0)
        model.bias.grad = torch.ones_like(model.bias)
        scaler.step(sgd)
        scaler.update()
        scales.append(scaler.get_scale().item())
    assert scales == [4, 8, 8, 16, 16, 16, 16, 16, 8, 4, 2, 2]


def test_static_scaling_scales_the_loss_and_unscales_the_gradients():
    a, b = _model(), _model()
    scaler = amp.GradScaler(loss_scale=128.0)
    sgd_a, sgd_b = SGD(a.parameters(), lr=0.1), SGD(b.parameters(), lr=0.1)
    loss = _loss(a, 0)
    assert torch.equal(scaler.scale(loss), loss * 128)
    amp.optimizer_step(_loss(a, 0), sgd_a, scaler)
    amp.optimizer_step(_loss(b, 0), sgd_b, None)
    for x, y in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(x, y)
    off = amp.GradScaler()  # loss_scale 0.0: no scaling at all
    assert not off.is_enabled() and off.scale(loss) is loss


def test_state_dict_carries_the_scale_and_counters_in_place():
    model = torch.nn.Linear(1, 1)
    sgd = SGD(model.parameters(), lr=0.0)
    scaler = amp.GradScaler(loss_scale="dynamic", init_scale=8.0, steps_per_increase=3)
    for overflow in (False, False, True, False):
        model.weight.grad = torch.full_like(model.weight, float("nan") if overflow else 1.0)
        model.bias.grad = torch.ones_like(model.bias)
        scaler.step(sgd)
        scaler.update()
    twin = amp.GradScaler(loss_scale="dynamic", steps_per_increase=3)
    scale = twin._scale
    twin.load_state_dict(scaler.state_dict())
    assert twin._scale is scale and twin.state_dict().keys() == scaler.state_dict().keys()
    assert all(torch.equal(twin.state_dict()[k], v) for k, v in scaler.state_dict().items())
    with pytest.raises(InvalidArgument, match="GradScaler state dict has the keys"):
        twin.load_state_dict({"scale": 1.0})


@pytest.mark.parametrize("kwargs, message", [
    (dict(loss_scale="auto"), "loss_scale must be 'dynamic' or a number ≥ 0; got 'auto'"),
    (dict(loss_scale=-1.0), "loss_scale must be 'dynamic' or a number"),
    (dict(loss_scale=8.0, init_scale=4.0), "init_scale only apply with loss_scale='dynamic'"),
    (dict(loss_scale="dynamic", steps_per_increase=0), "steps_per_increase must be a whole number ≥ 1"),
    (dict(loss_scale="dynamic", init_scale=2.0**20), r"init_scale 1048576.0 must lie in \[min_loss_scale"),
    (dict(loss_scale="dynamic", min_loss_scale=8.0, max_loss_scale=4.0), "max_loss_scale must be at least 8.0"),
    (dict(loss_scale="dynamic", min_loss_scale=0.0), "min_loss_scale must be above 0; got 0.0"),
    (dict(loss_scale="dynamic", overflow_tolerance=1.5), "overflow_tolerance must be at least 0.0, at most 1.0"),
    (dict(loss_scale="dynamic", max_gradient_norm=-1), "max_gradient_norm must be at least 0.0"),
])
def test_bad_parameters_are_refused(kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        amp.GradScaler(**kwargs)


def test_optimizer_step_clips_and_refuses_two_clippings(fresh_run):
    a, b = _model(), _model()
    sgd_a, sgd_b = SGD(a.parameters(), lr=0.1), SGD(b.parameters(), lr=0.1)
    amp.optimizer_step(_loss(a, 0), sgd_a, amp.GradScaler(loss_scale="dynamic"), max_gradient_norm=0.01)
    sgd_b.zero_grad()
    _loss(b, 0).backward()
    torch.nn.utils.clip_grad_norm_(b.parameters(), 0.01)
    sgd_b.step()
    for x, y in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(x, y)
    amp.optimizer_step(_loss(a, 1), sgd_a, None, max_gradient_val=1e-4)
    assert max(p.grad.abs().max().item() for p in a.parameters()) <= 1e-4
    with pytest.raises(InvalidArgument, match="not both"):
        amp.optimizer_step(_loss(a, 0), sgd_a, None, max_gradient_norm=1.0, max_gradient_val=1.0)
    with pytest.raises(InvalidArgument, match="not a cstorch.amp.GradScaler"):
        amp.optimizer_step(_loss(a, 0), sgd_a, torch.amp.GradScaler("cpu"))
    fresh_run.execmode = "PIPELINED"  # the scaler's own max_gradient_norm applies in pipelined mode only
    amp.optimizer_step(_loss(a, 2), sgd_a, amp.GradScaler(loss_scale=1.0, max_gradient_norm=1e-3))
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in a.parameters()]))
    assert norm.item() == pytest.approx(1e-3, rel=1e-3)


def test_mixed_precision_computes_in_half_and_keeps_float32_weights():
    model = _model()
    amp.check_float32_weights(model)
    with amp.autocast():
        assert model(torch.randn(2, 4)).dtype == torch.float16
    amp.use_bfloat16(True)
    try:
        with amp.autocast():
            assert model(torch.randn(2, 4)).dtype == torch.bfloat16 == amp.half_dtype()
    finally:
        amp.use_bfloat16(False)
    with pytest.raises(InvalidArgument, match="Only mixed precision is supported: weights are stored as float32, "
                                              r"but 0.weight is torch.float16 \(4 such parameters\)"):
        amp.check_float32_weights(_model().half())
    with pytest.raises(InvalidArgument, match="True or False"):
        amp.use_bfloat16("yes")


def test_the_scalers_call_order_is_torchs():
    model = torch.nn.Linear(1, 1)
    sgd = SGD(model.parameters(), lr=0.1)
    scaler = amp.GradScaler(loss_scale="dynamic")
    model.weight.grad, model.bias.grad = torch.ones(1, 1), torch.ones(1)
    scaler.unscale_(sgd)
    with pytest.raises(InvalidArgument, match=r"unscale_\(\) was already called on this optimizer since the last update"):
        scaler.unscale_(sgd)
    scaler.step(sgd)
    with pytest.raises(InvalidArgument, match=r"step\(\) was already called on this optimizer since the last update"):
        scaler.step(sgd)
    scaler.update()
    scaler.step(sgd)  # a new step after update()
    scaler.update(new_scale=4.0)
    assert scaler.get_scale().item() == 4.0
