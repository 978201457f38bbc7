"""The optimizers beyond SGD and Adam, eagerly: torch.optim's numbers where torch.optim has the
algorithm, the published algorithm's (tests/cstorch/optim_references.py) where it has not; the
real Cerebras classes' signatures, defaults and refusals; their state; configure_optimizer
finding each by name. (The same classes inside a compiled step: test_optimizers_in_step.py.)"""

import inspect

import pytest
import torch

from csadmin.cstorch import optim
from csadmin.cstorch.optim import configure_lr_scheduler, configure_optimizer
from csadmin.errors import InvalidArgument
from tests.cstorch import optim_references as references
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401

pytestmark = pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one

# (ours, torch.optim's, arguments both take): eps given where the real class's default is not torch's.
TORCH_CASES = [
    (optim.ASGD, torch.optim.ASGD, dict(lr=0.05)),
    (optim.ASGD, torch.optim.ASGD, dict(lr=0.05, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.01, maximize=True)),
    (optim.Adadelta, torch.optim.Adadelta, dict()),
    (optim.Adadelta, torch.optim.Adadelta, dict(lr=0.5, rho=0.8, eps=1e-5, weight_decay=0.1, maximize=True)),
    (optim.Adagrad, torch.optim.Adagrad, dict(lr=0.05, eps=1e-10)),
    (optim.Adagrad, torch.optim.Adagrad, dict(lr=0.05, lr_decay=0.1, weight_decay=0.01, initial_accumulator_value=0.1,
                                              eps=1e-6, maximize=True)),
    (optim.Adamax, torch.optim.Adamax, dict(lr=0.01, eps=1e-8)),
    (optim.Adamax, torch.optim.Adamax, dict(lr=0.02, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1, maximize=True)),
    (optim.RAdam, torch.optim.RAdam, dict(lr=0.01, eps=1e-8)),
    (optim.RAdam, torch.optim.RAdam, dict(lr=0.01, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)),
    (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01)),
    (optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01, alpha=0.9, momentum=0.9, centered=True, weight_decay=0.1)),
    (optim.Rprop, torch.optim.Rprop, dict(lr=0.01)),
    (optim.Rprop, torch.optim.Rprop, dict(lr=0.001, etas=(0.3, 1.5), step_sizes=(1e-4, 0.02))),
]

# (ours, its eager reference, arguments)
REFERENCE_CASES = [
    (optim.NAdam, references.nadam, dict()),
    (optim.NAdam, references.nadam, dict(betas=(0.8, 0.99), eps=1e-6, momentum_decay=0.02)),
    (optim.Lion, references.lion, dict()),
    (optim.Lion, references.lion, dict(betas=(0.8, 0.95), weight_decay=0.5)),
    (optim.Lamb, references.lamb, dict()),
    (optim.Lamb, references.lamb, dict(betas=(0.8, 0.9), eps=1e-8, weight_decay=0.1)),
    (optim.Lamb, references.lamb, dict(weight_decay=0.1, adam=True)),
    (optim.Adafactor, references.adafactor, dict()),
    (optim.Adafactor, references.adafactor, dict(eps=(1e-20, 1e-2), decay_rate=-0.6, weight_decay=0.1,
                                                 scale_parameter=False)),
]


class _Net(torch.nn.Module):
    """Parameters of one, two and three dimensions (Adafactor factors the last two)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.first, self.second = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3)
        self.mix = torch.nn.Parameter(torch.randn(2, 3, 3) * 0.5)

    def forward(self, x):
        logits = self.second(torch.tanh(self.first(x)))
        return logits + torch.einsum("bi,kij->bj", logits, self.mix)


def _train(net, step, steps=25):
    """`steps` updates of `net` on seeded batches; `step()` applies one from the gradients."""
    torch.manual_seed(1)
    for _ in range(steps):
        for p in net.parameters():
            p.grad = None
        torch.nn.functional.cross_entropy(net(torch.randn(16, 6)), torch.randint(0, 3, (16,))).backward()
        step()


def _assert_same(ours, theirs):
    for x, y in zip(ours.parameters(), theirs.parameters()):
        torch.testing.assert_close(x, y, rtol=1e-5, atol=1e-6)


def _ids(case):
    return getattr(case, "__name__", None) or ",".join(f"{k}={v}" for k, v in case.items()) or "defaults"


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["lr", "scheduled-lr"])
@pytest.mark.parametrize("ours, theirs, kwargs", TORCH_CASES, ids=_ids)
def test_each_takes_torch_optims_steps(ours, theirs, kwargs, tensor_lr):
    a, b = _Net(), _Net()
    optimizer = ours(a.parameters(), **kwargs)
    if tensor_lr:  # as a scheduler leaves it: a float64 0-d tensor, written in place
        for group in optimizer.param_groups:
            group["lr"] = torch.tensor(group["lr"], dtype=torch.float64)
    _train(a, optimizer.step)
    _train(b, theirs(b.parameters(), **kwargs).step)
    _assert_same(a, b)


@pytest.mark.parametrize("ours, reference, kwargs", REFERENCE_CASES, ids=_ids)
def test_each_takes_the_published_algorithms_steps(ours, reference, kwargs):
    a, b = _Net(), _Net()
    lr = 0.01
    optimizer, update, params = ours(a.parameters(), lr=lr, **kwargs), reference(**kwargs), list(b.parameters())
    _train(a, optimizer.step)

    def step():
        with torch.no_grad():
            update(params, lr)
    _train(b, step)
    _assert_same(a, b)


# The real classes' constructors (cerebras.pytorch.optim 2.x): every parameter after params and its default.
REAL_SIGNATURES = {
    optim.ASGD: dict(lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False),
    optim.Adadelta: dict(lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False),
    optim.Adafactor: dict(lr=inspect.Parameter.empty, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8,
                          beta1=None, weight_decay=0.0, scale_parameter=True, relative_step=False,
                          warmup_init=False),
    optim.Adagrad: dict(lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-6, maximize=False),
    optim.Adamax: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, maximize=False),
    optim.Lamb: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, adam=False),
    optim.Lion: dict(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0),
    optim.NAdam: dict(lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3),
    optim.RAdam: dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0),
    optim.RMSprop: dict(lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False),
    optim.Rprop: dict(lr=1e-3, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)),
}


def test_each_has_the_real_classs_signature_and_defaults():
    for cls, expected in REAL_SIGNATURES.items():
        parameters = list(inspect.signature(cls).parameters.values())
        assert parameters[0].name == "params"
        assert {p.name: p.default for p in parameters[1:]} == expected, cls.__name__
        assert list(expected) == [p.name for p in parameters[1:]], cls.__name__  # the same order, for positional use
        if cls is not optim.Adafactor:
            group = cls(_Net().parameters()).param_groups[0]
            assert all(group[name] == value for name, value in expected.items()), cls.__name__


# Every check each real class makes, broken once: (class, arguments, what the refusal says).
REFUSALS = [
    (optim.ASGD, dict(lr=-0.1), "ASGD: lr must be at least 0.0; got -0.1"),
    (optim.ASGD, dict(weight_decay=-1), "ASGD: weight_decay must be at least 0.0"),
    (optim.Adadelta, dict(lr=-1), "Adadelta: lr must be at least 0.0"),
    (optim.Adadelta, dict(rho=1.5), r"Adadelta: rho must be at least 0.0, at most 1.0; got 1.5"),
    (optim.Adadelta, dict(eps=-1e-6), "Adadelta: eps must be at least 0.0"),
    (optim.Adadelta, dict(weight_decay=-0.1), "Adadelta: weight_decay must be at least 0.0"),
    (optim.Adagrad, dict(lr=-1), "Adagrad: lr must be at least 0.0"),
    (optim.Adagrad, dict(lr_decay=-1), "Adagrad: lr_decay must be at least 0.0"),
    (optim.Adagrad, dict(weight_decay=-1), "Adagrad: weight_decay must be at least 0.0"),
    (optim.Adagrad, dict(initial_accumulator_value=-1), "Adagrad: initial_accumulator_value must be at least 0.0"),
    (optim.Adagrad, dict(eps=-1), "Adagrad: eps must be at least 0.0"),
    (optim.Adamax, dict(lr=-1), "Adamax: lr must be at least 0.0"),
    (optim.Adamax, dict(betas=(1.0, 0.999)), r"Adamax: betas\[0\] must be at least 0.0, below 1.0; got 1.0"),
    (optim.Adamax, dict(betas=(0.9, -0.1)), r"Adamax: betas\[1\] must be at least 0.0, below 1.0"),
    (optim.Adamax, dict(eps=-1), "Adamax: eps must be at least 0.0"),
    (optim.NAdam, dict(lr=-1), "NAdam: lr must be at least 0.0"),
    (optim.NAdam, dict(eps=-1), "NAdam: eps must be at least 0.0"),
    (optim.NAdam, dict(betas=(1.2, 0.9)), r"NAdam: betas\[0\] must be at least 0.0, below 1.0"),
    (optim.NAdam, dict(betas=(0.9, 1.0)), r"NAdam: betas\[1\] must be at least 0.0, below 1.0"),
    (optim.NAdam, dict(weight_decay=-1), "NAdam: weight_decay must be at least 0.0"),
    (optim.NAdam, dict(momentum_decay=-1), "NAdam: momentum_decay must be at least 0.0"),
    (optim.RAdam, dict(lr=-1), "RAdam: lr must be at least 0.0"),
    (optim.RAdam, dict(betas=(-0.1, 0.9)), r"RAdam: betas\[0\] must be at least 0.0, below 1.0"),
    (optim.RAdam, dict(betas=(0.9, 1.0)), r"RAdam: betas\[1\] must be at least 0.0, below 1.0"),
    (optim.RAdam, dict(weight_decay=-1), "RAdam: weight_decay must be at least 0.0"),
    (optim.RAdam, dict(eps=-1), "RAdam: eps must be at least 0.0"),
    (optim.RMSprop, dict(lr=-1), "RMSprop: lr must be at least 0.0"),
    (optim.RMSprop, dict(eps=-1), "RMSprop: eps must be at least 0.0"),
    (optim.RMSprop, dict(momentum=-1), "RMSprop: momentum must be at least 0.0"),
    (optim.RMSprop, dict(weight_decay=-1), "RMSprop: weight_decay must be at least 0.0"),
    (optim.RMSprop, dict(alpha=-1), "RMSprop: alpha must be at least 0.0"),
    (optim.Rprop, dict(lr=-1), "Rprop: lr must be at least 0.0"),
    (optim.Rprop, dict(etas=0.5), r"Rprop: etas must be a pair \(etaminus, etaplus\); got 0.5"),
    (optim.Rprop, dict(step_sizes=(1e-6, "big")), r"Rprop: step_sizes\[1\] must be a number"),
    (optim.Lamb, dict(lr=-1), "Lamb: lr must be at least 0.0"),
    (optim.Lamb, dict(eps=-1), "Lamb: eps must be at least 0.0"),
    (optim.Lamb, dict(betas=(1.0, 0.9)), r"Lamb: betas\[0\] must be at least 0.0, below 1.0"),
    (optim.Lamb, dict(betas=(0.9, 1.0)), r"Lamb: betas\[1\] must be at least 0.0, below 1.0"),
    (optim.Lion, dict(lr=-1), "Lion: lr must be at least 0.0"),
    (optim.Lion, dict(betas=(1.0, 0.9)), r"Lion: betas\[0\] must be at least 0.0, below 1.0"),
    (optim.Lion, dict(betas=(0.9, 1.0)), r"Lion: betas\[1\] must be at least 0.0, below 1.0"),
    (optim.Lion, dict(weight_decay=-1), "Lion: weight_decay must be at least 0.0"),
    (optim.Lion, dict(betas=(0.9,)), r"Lion: betas must be a pair \(beta1, beta2\)"),
    (optim.Adafactor, dict(lr=0.1, relative_step=True), "cannot combine a manual lr and relative_step=True"),
    (optim.Adafactor, dict(lr=0.1, warmup_init=True), "warmup_init=True is not supported yet"),
    (optim.Adafactor, dict(lr=0.1, clip_threshold=2.0), "only clip_threshold=1.0 is supported now; it was set to 2.0"),
    (optim.Adafactor, dict(lr=0.1, beta1=0.9), "only beta1=None is supported now; it was set to 0.9"),
    (optim.Adafactor, dict(lr=None, relative_step=True), "relative_step=True is not supported yet"),
    (optim.Adafactor, dict(lr=0.1, eps=(0, 1e-3)), r"eps must be a tuple or list of two floats; got \(0, 0.001\)"),
    (optim.Adafactor, dict(lr=0.1, eps=1e-3), "eps must be a tuple or list of two floats"),
]


@pytest.mark.parametrize("cls, kwargs, message", REFUSALS, ids=lambda c: getattr(c, "__name__", None))
def test_each_refuses_what_the_real_class_refuses(cls, kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        cls(_Net().parameters(), **kwargs)


def test_what_the_real_classes_leave_unchecked_is_taken():
    params = list(_Net().parameters())
    assert optim.ASGD(params, lambd=-1e-4, alpha=-0.5, t0=-1).param_groups[0]["t0"] == -1
    assert optim.Adamax(params, weight_decay=-0.1).param_groups[0]["weight_decay"] == -0.1
    assert optim.Lamb(params, weight_decay=-0.1).param_groups[0]["weight_decay"] == -0.1
    assert optim.Rprop(params, etas=(2.0, 0.5), step_sizes=(1.0, 0.1)).param_groups[0]["etas"] == (2.0, 0.5)
    assert optim.Adafactor(params, lr=-0.1, decay_rate=0.5).param_groups[0]["lr"] == -0.1
    with pytest.raises(InvalidArgument, match="ASGD: t0 must be a number, not 'soon'"):
        optim.ASGD(params, t0="soon")  # a number, still


def test_each_keeps_its_state_in_tensors_made_once():
    net = _Net()
    params = list(net.parameters())
    expected = {  # the real class's state names, and which are shaped like their parameter
        optim.ASGD: ({"eta", "mu", "ax", "step"}, ["ax"]),
        optim.Adadelta: ({"square_avg", "acc_delta"}, ["square_avg", "acc_delta"]),
        optim.Adagrad: ({"sum", "step"}, ["sum"]),
        optim.Adamax: ({"exp_avg", "exp_inf", "beta1_power"}, ["exp_avg", "exp_inf"]),
        optim.NAdam: ({"mu_product", "exp_avg", "exp_avg_sq", "step"}, ["exp_avg", "exp_avg_sq"]),
        optim.RAdam: ({"exp_avg", "exp_avg_sq", "step"}, ["exp_avg", "exp_avg_sq"]),
        optim.Lion: ({"exp_avg"}, ["exp_avg"]),
        optim.Rprop: ({"prev", "step_size"}, ["prev", "step_size"]),
        optim.Lamb: ({"exp_avg", "exp_avg_sq"}, ["exp_avg", "exp_avg_sq"]),
    }
    for cls, (names, sparse) in expected.items():
        optimizer = cls(params, lr=0.01)
        made = {id(t) for s in optimizer.state.values() for t in s.values()}
        _train(net, optimizer.step, steps=2)
        assert all(set(optimizer.state[p]) == names for p in params), cls.__name__
        assert {id(t) for s in optimizer.state.values() for t in s.values()} == made, cls.__name__
        assert optimizer.state_names_to_sparsify() == sparse, cls.__name__
    rms = optim.RMSprop(params, momentum=0.9, centered=True)
    assert set(rms.state[params[0]]) == {"square_avg", "momentum_buffer", "grad_avg"}
    assert rms.state_names_to_sparsify() == ["square_avg", "momentum_buffer", "grad_avg"]
    factored = optim.Adafactor(params, lr=0.01)
    weight, bias, mix = net.first.weight, net.first.bias, net.mix
    shapes = {p: tuple(factored.state[p][name].shape for name in ("exp_avg_sq_row", "exp_avg_sq_col"))
              for p in (weight, mix)}
    assert shapes == {weight: ((8,), (6,)), mix: ((2, 3), (2, 3))}
    assert set(factored.state[bias]) == {"exp_avg_sq", "step"} and factored.state_names_to_sparsify() == ["exp_avg_sq"]


@pytest.mark.parametrize("ours, theirs, kwargs", [(optim.ASGD, torch.optim.ASGD, dict(lr=0.05, t0=3)),
                                                    (optim.Adagrad, torch.optim.Adagrad, dict(lr=0.05, eps=1e-10)),
                                                    (optim.RAdam, torch.optim.RAdam, dict(lr=0.01, eps=1e-8))],
                         ids=lambda c: getattr(c, "__name__", None))
def test_resumes_from_a_torch_optim_checkpoint_with_its_state_names(fresh_run, ours, theirs, kwargs):
    """The state is torch's (names and values), so torch's state dict loads and the steps go on the same."""
    reference, net = _Net(), _Net()
    torch_optimizer = theirs(reference.parameters(), **kwargs)
    _train(reference, torch_optimizer.step, steps=7)
    optimizer = ours(net.parameters(), **kwargs)
    net.load_state_dict(reference.state_dict())
    optimizer.load_state_dict(torch_optimizer.state_dict())
    _train(reference, torch_optimizer.step, steps=6)
    _train(net, optimizer.step, steps=6)
    _assert_same(net, reference)
    for p, q in zip(net.parameters(), reference.parameters()):
        for name, value in optimizer.state[p].items():
            torch.testing.assert_close(value, torch_optimizer.state[q][name], rtol=1e-5, atol=1e-6)


def test_nadam_reads_torch_nadams_state():
    reference = _Net()
    torch_nadam = torch.optim.NAdam(reference.parameters())
    _train(reference, torch_nadam.step, steps=3)
    nadam = optim.NAdam(_Net().parameters())
    nadam.load_state_dict(torch_nadam.state_dict())
    first, theirs = next(iter(nadam.state.values())), next(iter(torch_nadam.state.values()))
    assert sorted(first) == sorted(theirs) and torch.equal(first["mu_product"], theirs["mu_product"])


def test_adafactor_without_lr_is_scheduled_or_refused_at_its_step(fresh_run):
    net = _Net()
    unset = optim.Adafactor(net.parameters(), lr=None)
    with pytest.raises(InvalidArgument, match="Adafactor: the learning rate is not set for the group"):
        _train(net, unset.step, steps=1)
    a, b = _Net(), _Net()
    scheduled = configure_optimizer("adafactor", a.parameters(),
                                    learning_rate={"scheduler": "Constant", "learning_rate": 0.01})
    assert scheduled.param_groups[0]["lr"] is None  # no lr given: the schedule sets it
    configure_lr_scheduler(scheduled, {"scheduler": "Constant", "learning_rate": 0.01})
    update, params = references.adafactor(), list(b.parameters())
    _train(a, scheduled.step)

    def step():
        with torch.no_grad():
            update(params, 0.01)
    _train(b, step)
    _assert_same(a, b)


def test_configure_optimizer_finds_each_by_name_and_takes_a_runners_pairs():
    params = list(_Net().parameters())
    for name in REAL_SIGNATURES:
        assert type(configure_optimizer(name.__name__.upper(), params, lr=0.01)) is name
    adafactor = configure_optimizer("Adafactor", params, learning_rate=0.01, eps1=1e-20, eps2=1e-2,
                                    weight_decay_rate=0.1)
    assert [adafactor.param_groups[0][k] for k in ("lr", "eps", "weight_decay")] == [0.01, (1e-20, 1e-2), 0.1]
    rprop = configure_optimizer("rprop", params, eta1=0.4, step_size_max=10.0)
    assert (rprop.param_groups[0]["etas"], rprop.param_groups[0]["step_sizes"]) == ((0.4, 1.2), (1e-6, 10.0))
    assert configure_optimizer("Lion", params, beta2=0.95).param_groups[0]["betas"] == (0.9, 0.95)
    with pytest.raises(InvalidArgument, match="Rprop: eta1/eta2 and etas are one parameter, given twice"):
        configure_optimizer("Rprop", params, eta1=0.4, etas=(0.5, 1.2))
    with pytest.raises(InvalidArgument) as refused:
        configure_optimizer("Adagrad", params, beta1=0.9)
    assert refused.value.message.startswith("Adagrad does not take 'beta1'; it takes lr, lr_decay, weight_decay, "
                                            "initial_accumulator_value, eps, maximize (and a runner's learning_rate, "
                                            "weight_decay_rate, max_gradient_norm, ")
    with pytest.raises(InvalidArgument, match="Adafactor: only beta1=None is supported now"):
        configure_optimizer("Adafactor", params, lr=0.01, beta1=0.9)  # Adafactor's own beta1, not a pair's half


def test_a_sparse_gradient_is_refused():
    embedding = torch.nn.Embedding(5, 3, sparse=True)
    embedding(torch.tensor([1, 2])).sum().backward()
    for cls in (optim.Adagrad, optim.RMSprop, optim.Lion):
        with pytest.raises(InvalidArgument, match=f"{cls.__name__} does not support sparse gradients"):
            cls(embedding.parameters(), lr=0.1).step()
