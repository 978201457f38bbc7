"""cstorch.optim against torch.optim, eagerly: the same numbers step after step, and the rules that
keep an optimizer capturable (state only from preinitialize, tensors, updated in place)."""

import copy

import pytest
import torch

from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.backend.config import Config
from csadmin.cstorch.optim import SGD, Adam, AdamW, Optimizer, configure_optimizer, core_guard
from csadmin.errors import InvalidArgument, InvalidState
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401

pytestmark = pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one

CASES = [
    (SGD, torch.optim.SGD, dict(lr=0.1)),
    (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9)),
    (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.9, dampening=0.3, weight_decay=0.01)),
    (SGD, torch.optim.SGD, dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.1)),
    (Adam, torch.optim.Adam, dict(lr=0.01)),
    (Adam, torch.optim.Adam, dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    (Adam, torch.optim.Adam, dict(lr=0.01, amsgrad=True)),
    (AdamW, torch.optim.AdamW, dict(lr=0.01)),
    (AdamW, torch.optim.AdamW, dict(lr=0.03, weight_decay=0.2, amsgrad=True)),
]


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))


def _train(model, optimizer, steps=25):
    torch.manual_seed(1)
    for _ in range(steps):
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(torch.randn(16, 6)), torch.randint(0, 3, (16,))).backward()
        optimizer.step()


@pytest.mark.parametrize("ours, theirs, kwargs", CASES, ids=lambda c: getattr(c, "__name__", str(c)))
def test_each_optimizer_takes_torch_optims_steps(ours, theirs, kwargs):
    a, b = _model(), _model()
    _train(a, ours(a.parameters(), **kwargs))
    _train(b, theirs(b.parameters(), **kwargs))
    for x, y in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("ours, theirs, kwargs", CASES[4:], ids=lambda c: getattr(c, "__name__", str(c)))
def test_a_scheduler_style_tensor_lr_gives_the_same_steps(ours, theirs, kwargs):
    a, b = _model(), _model()
    optimizer = ours(a.parameters(), **kwargs)
    for group in optimizer.param_groups:
        group["lr"] = torch.tensor(group["lr"])
    _train(a, optimizer)
    _train(b, theirs(b.parameters(), **kwargs))
    for x, y in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def test_state_lives_in_tensors_made_once_and_updated_in_place():
    model = _model()
    adam = Adam(model.parameters(), lr=0.01)
    before = {id(t) for state in adam.state.values() for t in state.values()}
    _train(model, adam, steps=3)
    assert {id(t) for state in adam.state.values() for t in state.values()} == before
    first = next(model.parameters())
    assert adam.state[first]["step"].item() == 3 and adam.state[first]["step"].dtype == torch.float32
    # the real Adam's names beside torch's step: β^t for the coming step t, float32 as the real ones
    assert sorted(adam.state[first]) == ["beta1_power", "beta2_power", "exp_avg", "exp_avg_sq", "step"]
    assert adam.state[first]["beta1_power"].item() == torch.tensor(0.9).mul_(0.9).mul_(0.9).mul_(0.9).item()
    assert adam.state[first]["beta2_power"].dtype == torch.float32
    assert adam.state_names_to_sparsify() == ["exp_avg", "exp_avg_sq"]


class _Lazy(Optimizer):
    """Creates its state in step, as torch's own optimizers do: refused."""

    def __init__(self, params):
        super().__init__(params, dict(lr=0.1))

    def preinitialize(self):
        pass

    def step(self, closure=None):
        for p in self.parameters():
            self.state[p]["buf"] = torch.zeros_like(p)

    def state_names_to_sparsify(self):
        return ["buf"]


class _Rebinding(_Lazy):
    def preinitialize(self):
        for p in self.parameters():
            self.state[p]["buf"] = torch.zeros_like(p)

    def step(self, closure=None):
        for p in self.parameters():
            self.state[p]["buf"] = self.state[p]["buf"] + 1


class _PythonState(_Lazy):
    def preinitialize(self):
        for p in self.parameters():
            self.state[p]["count"] = 0


def test_state_made_outside_preinitialize_is_refused_with_the_documents_rule():
    with pytest.raises(InvalidState, match="created the state variable 'buf' outside preinitialize: no state "
                                           "variables may be initialized outside of the preinitialize method"):
        _Lazy(_model().parameters()).step()
    with pytest.raises(InvalidState, match="rebound its state variable 'buf'.*in place"):
        _Rebinding(_model().parameters()).step()
    with pytest.raises(InvalidArgument, match="'count' is a int; optimizer state is tensors"):
        _PythonState(_model().parameters())
    sgd = SGD(_model().parameters(), lr=0.1, momentum=0.9)
    with pytest.raises(InvalidState, match="replaced"):
        sgd.state[next(_model().parameters())] = {}
    with pytest.raises(InvalidState, match="fixed once it is built"):
        sgd.add_param_group({"params": [torch.nn.Parameter(torch.zeros(2))]})


class _WholeDict(_Lazy):
    """State made as torch's own optimizers write it: a whole dict per parameter."""

    def preinitialize(self):
        for p in self.parameters():
            self.state[p] = {"buf": torch.zeros_like(p), "anchor": p.detach().clone()}


class _WholeDictOfNumbers(_Lazy):
    def preinitialize(self):
        for p in self.parameters():
            self.state[p] = {"count": 0}


def test_preinitialize_may_make_a_parameters_state_as_a_whole_dict():
    params = list(_model().parameters())
    optimizer = _WholeDict(params)
    assert sorted(optimizer.state[params[0]]) == ["anchor", "buf"]
    assert torch.equal(optimizer.state[params[0]]["anchor"], params[0])
    with pytest.raises(InvalidState, match="created the state variable 'extra' outside preinitialize"):
        optimizer.state[params[0]]["extra"] = torch.zeros(1)  # the dict keeps the rules
    with pytest.raises(InvalidState, match="replaced"):
        optimizer.state[params[0]] = {"buf": torch.zeros_like(params[0])}
    with pytest.raises(InvalidArgument, match="'count' is a int; optimizer state is tensors"):
        _WholeDictOfNumbers(_model().parameters())


def test_an_abstract_method_left_out_cannot_be_built():
    class Half(Optimizer):
        def preinitialize(self):
            pass

        def step(self, closure=None):
            pass

    with pytest.raises(TypeError, match="state_names_to_sparsify"):
        Half(_model().parameters(), {})


def test_state_dict_round_trips_in_place_and_reads_torch_optims_state(fresh_run):
    model, twin, reference = _model(), _model(), _model()
    adam, twin_adam = Adam(model.parameters(), lr=0.01), Adam(twin.parameters(), lr=0.5)
    torch_adam = torch.optim.Adam(reference.parameters(), lr=0.01)
    _train(model, adam, steps=4)
    _train(reference, torch_adam, steps=4)
    tensors = {id(t) for state in twin_adam.state.values() for t in state.values()}
    saved = adam.state_dict()
    twin.load_state_dict(model.state_dict())
    twin_adam.load_state_dict(copy.deepcopy(saved))
    assert {id(t) for state in twin_adam.state.values() for t in state.values()} == tensors
    assert twin_adam.param_groups[0]["lr"] == 0.01
    from_torch = Adam(_model().parameters(), lr=0.3)
    from_torch.load_state_dict(torch_adam.state_dict())
    for p, q in zip(from_torch.parameters(), reference.parameters()):
        torch.testing.assert_close(from_torch.state[p]["exp_avg"], torch_adam.state[q]["exp_avg"])
    _train(model, adam, steps=2)
    _train(twin, twin_adam, steps=2)
    for x, y in zip(model.parameters(), twin.parameters()):
        assert torch.equal(x, y)
    with pytest.raises(InvalidArgument, match=r"groups of \[4\] parameters.*has \[2\]"):
        Adam(torch.nn.Linear(2, 2).parameters()).load_state_dict(saved)
    with pytest.raises(InvalidArgument, match=r"has \['beta1_power', 'beta2_power', 'exp_avg', 'exp_avg_sq', 'step'\]; this SGD "
                                              r"keeps \['momentum_buffer'\]"):
        SGD(_model().parameters(), momentum=0.9).load_state_dict(saved)
    with pytest.raises(InvalidArgument, match="'state' and 'param_groups'"):
        adam.load_state_dict({"model": 1})


def test_state_dict_only_on_a_checkpoint_step(fresh_run):
    sgd = SGD(_model().parameters(), lr=0.1)
    fresh_run.config, fresh_run.run.step = Config(checkpoint_steps=10), 7
    with pytest.raises(InvalidState, match="Cannot fetch the optimizer's weights after step 7: It is only possible "
                                           "to fetch weights on predetermined checkpoint steps"):
        sgd.state_dict()
    fresh_run.run.step = 20
    assert sgd.state_dict()["param_groups"][0]["lr"] == 0.1


def test_configure_optimizer_builds_by_name_and_refuses_clearly():
    optimizer_params = {"optimizer_type": "SGD", "lr": 0.001, "momentum": 0.5}
    sgd = configure_optimizer(optimizer_type=optimizer_params.pop("optimizer_type"),
                              params=_model().parameters(), **optimizer_params)
    assert isinstance(sgd, SGD) and sgd.param_groups[0]["momentum"] == 0.5
    assert isinstance(configure_optimizer("adamw", _model().parameters()), AdamW)
    with pytest.raises(InvalidArgument, match="Unknown optimizer 'SparseAdam'. Valid optimizers: ASGD, Adadelta, "
                                              "Adafactor, Adagrad, Adam, AdamW, Adamax, Lamb, Lion, NAdam, RAdam, "
                                              "RMSprop, Rprop, SGD."):
        configure_optimizer("SparseAdam", _model().parameters())
    with pytest.raises(InvalidArgument, match="SGD does not take 'beta'; it takes lr, momentum, dampening"):
        configure_optimizer("SGD", _model().parameters(), beta=0.9)
    for bad, message in ((dict(lr=-1), "lr must be at least 0.0; got -1.0"), (dict(lr="fast"), "lr must be a number"),
                         (dict(betas=(0.9, 1.0)), r"betas\[1\] must be at least 0.0, below 1.0"),
                         (dict(betas=0.9), "betas must be a pair")):
        with pytest.raises(InvalidArgument, match=message):
            configure_optimizer("Adam", _model().parameters(), **bad)
    with pytest.raises(InvalidArgument, match="Nesterov momentum requires a momentum"):
        SGD(_model().parameters(), nesterov=True)


def test_a_core_torch_optimizer_stepped_inside_a_step_is_refused_with_the_documents_reason():
    core_guard.install(process_backend.current())
    try:
        model = _model()
        torch_sgd, ours = torch.optim.SGD(model.parameters(), lr=0.1), SGD(model.parameters(), lr=0.1)
        model(torch.randn(2, 6)).sum().backward()
        torch_sgd.step()  # outside a step: eager PyTorch as usual
        with process_backend.current().stepping():
            ours.step()
            with pytest.raises(InvalidState, match="torch.optim.sgd.SGD was stepped inside a compiled step: the core "
                                                   "PyTorch optimizers were designed for eager execution"):
                torch_sgd.step()
    finally:
        process_backend.reset()  # removes the guard


def test_a_copied_or_pickled_optimizer_keeps_its_state_and_its_rules():
    import pickle

    model = _model()
    adam = Adam(model.parameters(), lr=0.01)
    _train(model, adam, steps=2)
    for twin in (copy.deepcopy(adam), pickle.loads(pickle.dumps(adam))):
        first = twin.param_groups[0]["params"][0]
        assert twin.state[first]["step"].item() == 2 and twin.enable_global_step
        assert twin.state[first]["beta1_power"].item() == torch.tensor(0.9).mul_(0.9).mul_(0.9).item()
        assert torch.equal(twin.state[first]["exp_avg"], adam.state[next(model.parameters())]["exp_avg"])
        with pytest.raises(InvalidState, match="outside preinitialize"):
            twin.state[first]["extra"] = torch.zeros(1)
        with pytest.raises(InvalidState, match="fixed once it is built"):
            twin.add_param_group({"params": [torch.nn.Parameter(torch.zeros(1))]})


def test_step_takes_torchs_closure_and_returns_its_loss():
    model, twin = _model(), _model()
    ours, theirs = Adam(model.parameters(), lr=0.01), torch.optim.Adam(twin.parameters(), lr=0.01)
    batch = torch.randn(4, 6)
    for m, o in ((model, ours), (twin, theirs)):
        before = m(batch).pow(2).mean().detach()

        def closure(m=m, o=o):
            o.zero_grad()
            loss = m(batch).pow(2).mean()
            loss.backward()
            return loss

        assert torch.equal(o.step(closure).detach(), before)
    torch.testing.assert_close(list(model.parameters()), list(twin.parameters()))


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_a_hyperparameter_set_inside_a_step_is_refused_as_a_torch_scheduler_would():
    sgd = SGD(_model().parameters(), lr=0.1)
    torch_schedule = torch.optim.lr_scheduler.StepLR(sgd, step_size=1)  # built outside a step: fine
    sgd.param_groups[0]["momentum"] = 0.0  # outside a step: a plain setting
    with process_backend.current().stepping():
        with pytest.raises(InvalidState, match=r"param_groups\[...\]\['lr'\] was set inside a compiled step: .*"
                                               "the vanilla PyTorch learning rate schedulers are not compatible"):
            torch_schedule.step()
        with pytest.raises(InvalidState, match=r"'weight_decay'\] was set inside a compiled step"):
            sgd.param_groups[0]["weight_decay"] = 0.1
    assert sgd.param_groups[0]["lr"] == 0.1


def test_sgd_keeps_torchs_state_and_reads_a_torch_sgd_checkpoint():
    reference, model = _model(), _model()
    theirs = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    _train(reference, theirs, steps=3)
    ours = SGD(model.parameters(), lr=0.5, momentum=0.9)
    model.load_state_dict(reference.state_dict())
    ours.load_state_dict(theirs.state_dict())
    assert ours.param_groups[0]["lr"] == 0.05
    _train(reference, theirs, steps=4)
    _train(model, ours, steps=4)
    torch.testing.assert_close(list(model.parameters()), list(reference.parameters()), rtol=1e-5, atol=1e-6)
    damped = SGD(_model().parameters(), momentum=0.9, dampening=0.1)
    assert all(sorted(state) == ["momentum_buffer", "step"] for state in damped.state.values())
    assert all(sorted(state) == ["momentum_buffer"] for state in ours.state.values())


def test_adamw_correct_bias_false_leaves_out_the_bias_corrections():
    """The Cerebras AdamW's correct_bias (gigaGPT passes it): False is the update without them."""
    grads = [torch.tensor([0.5, -1.0, 2.0]), torch.tensor([-0.3, 0.7, 1.5])]
    expected, m, v = torch.tensor([1.0, -2.0, 3.0]), torch.zeros(3), torch.zeros(3)
    for g in grads:  # Adam's moments, decoupled decay, and no bias correction
        m, v = 0.9 * m + 0.1 * g, 0.99 * v + 0.01 * g * g
        expected = expected * (1 - 0.1 * 0.01) - 0.1 * m / (v.sqrt() + 1e-8)
    results = {}
    for correct_bias in (False, True):
        p = torch.nn.Parameter(torch.tensor([1.0, -2.0, 3.0]))
        optimizer = AdamW([p], lr=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.01, correct_bias=correct_bias)
        for g in grads:
            p.grad = g.clone()
            optimizer.step()
        results[correct_bias] = p.detach()
    assert torch.allclose(results[False], expected, rtol=1e-6)
    assert not torch.allclose(results[True], expected)  # the default corrects, as torch's AdamW
