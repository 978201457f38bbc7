"""What the captured program cannot follow is refused, not silently ignored (against a real csd):
a parameter frozen or unfrozen between steps, a parameter, tensor attribute or submodule of the
compiled model rebound after the first step (refused at the next step, naming it), and an op whose
output shape depends on the data (refused at capture, naming the op, the line and the fix).
`torch.compile(fullgraph=True)` stops at each of these too (a guard that recompiles, a graph
break); the fabric cannot recompile within a run."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import Trainer, as_the_system, batches, configure, model, run_record

NEXT = ("Make such changes before the first step, or start a new run (a new process) for the changed model; "
        "to change values, update the tensor in place (with torch.no_grad(): t.copy_(new)).")


def test_a_parameter_frozen_between_steps_is_refused_at_the_next_step(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    data = batches(3)
    t.step(*data[0])
    t.net[0].weight.requires_grad_(False)  # "freeze" it: the program would keep updating it
    frozen = t.net[0].weight.detach().clone()
    with pytest.raises(errors.ReprogramForbidden) as exc:
        t.step(*data[1])
    assert exc.value.message == (
        "Parameter '0.weight' of the compiled model Sequential had requires_grad=True when the program was "
        "compiled and has requires_grad=False now: the fabric holds the program compiled with it trainable (its "
        "gradient and update are part of the program) and cannot be reprogrammed in this run.")
    assert exc.value.hint == NEXT
    assert torch.equal(t.net[0].weight, frozen)  # the refused step ran nothing
    t.net[0].weight.requires_grad_(True)  # as it was compiled: the run goes on
    t.step(*data[1])
    assert process_backend.current().run.step == 2


def test_a_parameter_unfrozen_between_steps_is_refused_too(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    net[2].bias.requires_grad_(False)
    t = Trainer(net)
    t.step(*batches(1)[0])
    net[2].bias.requires_grad_(True)
    with pytest.raises(errors.ReprogramForbidden, match=r"^Parameter '2.bias' of the compiled model Sequential had "
                                                        r"requires_grad=False when the program was compiled"):
        t.step(*batches(1)[0])


class WithEma(torch.nn.Module):
    """A model keeping an exponential moving average of its weight as a plain tensor attribute."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 2)
        self.ema = self.fc.weight.detach().clone()

    def forward(self, x):
        return self.fc(x)


def _ema_trainer():
    torch.manual_seed(0)
    net = WithEma()
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)

    @cstorch.compile_step
    def training_step(x, y):
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            net.ema.mul_(0.9).add_(net.fc.weight, alpha=0.1)
        return loss

    return net, training_step


@pytest.mark.parametrize("rebind, message", [
    (lambda net: setattr(net.fc, "weight", torch.nn.Parameter(net.fc.weight.detach().clone())),
     "Parameter 'fc.weight' of the compiled model WithEma was rebound to another tensor after the first step"),
    (lambda net: setattr(net, "ema", net.ema.clone()),
     "Tensor 'ema' of the compiled model WithEma was rebound to another tensor after the first step"),
    (lambda net: setattr(net, "fc", torch.nn.Linear(8, 2)),
     "Submodule 'fc' of the compiled model WithEma was replaced after the first step (Linear → Linear)"),
])  # load_state_dict(..., assign=True) is refused at once, before it rebinds anything (backend/test_backend_api.py)
def test_a_tensor_of_the_compiled_model_rebound_after_the_first_step_is_refused(ws_csd, tmp_path, rebind, message):
    configure(ws_csd, tmp_path)
    net, training_step = _ema_trainer()
    data = batches(2)
    training_step(*data[0])
    rebind(net)
    with pytest.raises(errors.ReprogramForbidden) as exc:
        training_step(*data[1])
    assert exc.value.message.startswith(message + ": the fabric holds the program compiled with ")
    assert exc.value.message.endswith("the new one would never be read or trained, and the fabric cannot be "
                                      "reprogrammed in this run.")
    assert exc.value.hint == NEXT


def test_values_changed_in_place_between_steps_are_followed(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, checkpoint_steps=1)
    net, training_step = _ema_trainer()
    data = batches(3)
    training_step(*data[0])
    with torch.no_grad():
        net.fc.weight.zero_()
        net.ema.fill_(1.0)
    net.load_state_dict(net.state_dict())  # copies in place: the same tensors
    training_step(*data[1])
    assert torch.equal(net.ema, torch.ones(2, 8).mul_(0.9).add_(net.fc.weight, alpha=0.1))  # from the new values
    assert net.fc.weight.abs().max().item() < 0.1  # one step of lr 0.1 from zero


@pytest.mark.parametrize("body, op", [
    (lambda out, y: out[y > 0].sum(), "boolean-mask indexing t[mask]"),
    (lambda out, y: torch.nonzero(y).float().sum() + out.sum(), "torch.nonzero"),
    (lambda out, y: torch.where(y > 0)[0].float().sum() + out.sum(), "torch.nonzero"),
    (lambda out, y: torch.masked_select(out[:, 0], y > 0).sum(), "torch.masked_select"),
    (lambda out, y: torch.unique(y).float().sum() + out.sum(), "torch.unique"),
    (lambda out, y: torch.bincount(y).float().sum() + out.sum(), "torch.bincount"),
])
def test_a_data_dependent_shape_is_refused_at_capture_with_the_op_the_line_and_the_fix(ws_csd, tmp_path, body, op):
    configure(ws_csd, tmp_path)
    runs_before = len(ws_csd.client().runs_list()["runs"])
    compiled = cstorch.compile(net := model(), backend="wse_ws")
    before = [p.detach().clone() for p in net.parameters()]

    @cstorch.compile_step
    def eval_step(x, y):
        return body(compiled(x), y)

    with pytest.raises(errors.ReprogramForbidden) as exc:
        with torch.no_grad():
            eval_step(*batches(1)[0])
    message = exc.value.message
    assert message.startswith(f"{op}")
    assert f"inside the compile_step function 'eval_step' (at test_static_program.py:{body.__code__.co_firstlineno}) " \
           "makes a tensor whose shape depends on the data: the fabric runs one static program, compiled once: the " \
           "compute graph must not change between iterations, so no tensor's shape may depend on the data." in message
    assert "torch.where(mask, t, other) instead of t[mask]" in exc.value.hint
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))
    assert len(ws_csd.client().runs_list()["runs"]) == runs_before  # nothing opened


def test_a_masked_assignment_of_one_value_keeps_its_shape_and_replays_as_eager(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(net := model(), backend="wse_ws")

    @cstorch.compile_step
    def eval_step(x):
        out = compiled(x)
        out[out < 0] = 0.0  # torch.where's job, written as users do: the shape stays
        return out

    with torch.no_grad():
        for x, _ in batches(3):
            with as_the_system():
                expected = net(x).clamp(min=0)
            assert torch.equal(eval_step(x), expected)
    assert run_record(ws_csd)["mode"] == "eval"


def test_a_constant_made_in_the_step_and_updated_in_place_starts_afresh_every_step(ws_csd, tmp_path):
    """`torch.tensor(0.0)` accumulated with `+=` inside the step (the vendor runner's norms): each
    replay starts from the constant, as each eager call does; nothing carries over."""
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(net := model(), backend="wse_ws")
    seen = []

    @cstorch.step_closure
    def record(value):
        seen.append(value.item())

    @cstorch.compile_step
    def eval_step(x):
        total = torch.tensor(0.0)
        for p in net.parameters():
            total += p.float().pow(2).sum()
        record(total)
        return compiled(x)

    with torch.no_grad():
        for x, _ in batches(3):
            eval_step(x)
        expected = sum(p.float().pow(2).sum() for p in net.parameters()).item()
    assert seen == [pytest.approx(expected, rel=1e-6)] * 3
