"""Half precision emulated, not executed (docs/cstorch.md, "The numerics contract"), against a
real csd: a compiled step's half values are rounded to the run's format (float16, bfloat16,
cbfloat16) where they are made and its arithmetic is float32. So

  * an elementwise op is eager autocast's bit for bit, forward and backward, wherever PyTorch's
    own half kernel computes in float32 and rounds once (the ops of OPS below, measured with
    PyTorch 2.13 on an AVX-512 CPU); where it does not (EXCEPTIONS), the step gives the contract's
    number — the float32 kernel's result rounded — and eager is within a unit in the last place;
  * a matrix product or a reduction is its half-rounded inputs, a float32 sum, the result rounded:
    exactly that, and within the bound that implies of eager autocast (whose float32 sum runs in
    another order);
  * the user sees float16 (bfloat16) tensors for half values, float32 for cbfloat16's, float32
    gradients; cbfloat16 keeps values beyond float16's range.

The half dtype is set with cstorch.amp.set_half_dtype (the real API's names), before the first
step only."""

import json

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch import amp
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.amp.formats import FORMATS
from csadmin.errors import InvalidArgument, InvalidState
from tests.cstorch.helpers import Trainer, batches, configure, model

F = torch.nn.functional

# name → the op on a half tensor h (its half result); each gets its own weight so its backward is
# its own gradient.
OPS = {
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "exp": lambda h: torch.exp(h * 0.25), "silu": F.silu,
    "softplus": F.softplus, "mish": F.mish, "gelu_tanh": lambda h: F.gelu(h, approximate="tanh"),
    "gelu": F.gelu, "erf": torch.erf, "hardswish": F.hardswish, "leaky_relu": lambda h: F.leaky_relu(h, 0.3),
    "elu": F.elu, "relu": F.relu, "square": lambda h: h * h, "add_scalar": lambda h: h + 0.3,
    "sub_alpha": lambda h: torch.sub(h, h.flip(0), alpha=0.3), "rsub": lambda h: 0.7 - h,
    "mul_scalar": lambda h: h * 1.7, "div": lambda h: h / (h.abs() + 1), "pow": lambda h: h ** 2,
    "sqrt": lambda h: torch.sqrt(h.abs()), "rsqrt": lambda h: torch.rsqrt(h.abs() + 1),
    "log": lambda h: torch.log(h.abs() + 1), "sin": torch.sin, "cos": torch.cos,
    "clamp": lambda h: h.clamp(-0.7, 0.9), "where": lambda h: torch.where(h > 0.1, h, h * 0.1),
    "reciprocal": lambda h: 1 / (h.abs() + 0.5), "dropout": lambda h: F.dropout(h, 0.3, True),
    "softmax": lambda h: torch.softmax(h, -1), "addcmul": lambda h: torch.addcmul(h, h, h, value=0.3),
    "lerp": lambda h: torch.lerp(h, h.flip(0), 0.3), "in_place": lambda h: h.mul(1.5).add_(h, alpha=0.3),
}
# Where PyTorch's half kernel is not its float32 kernel rounded once (found over several data sets;
# a given one may hit them or not): GELU's erf form, erf and sqrt compute a slightly different
# function in half; float16's sigmoid backward rounds (1 - y) and g·(1 - y) to float16 before the
# last product, bfloat16's rsqrt backward its y·y before y³; softmax's backward is a reduction (a
# float32 sum in another order).
EXCEPTIONS = {
    "float16": {("gelu", "forward"), ("gelu", "backward"), ("erf", "forward"), ("erf", "backward"),
                ("sqrt", "forward"), ("sqrt", "backward"), ("sigmoid", "backward"), ("softmax", "backward")},
    "bfloat16": {("gelu", "forward"), ("gelu", "backward"), ("erf", "forward"), ("erf", "backward"),
                 ("sqrt", "forward"), ("sqrt", "backward"), ("rsqrt", "backward"), ("softmax", "backward")},
}


def ulp(values: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of `dtype` at each of `values` (float32)."""
    v = values.to(dtype)
    return (torch.nextafter(v, torch.full_like(v, float("inf"))).float() - v.float()).abs()


def elementwise_step(fmt, weights, x):
    """The step: each op on its own half input h = w·x (both cast to the half dtype), a float32
    loss of all of them; returns the ops' results."""
    half = fmt.proxy
    outs = {}
    for name, op in OPS.items():
        outs[name] = op(weights[name].to(half) * x.to(half))
    loss = sum((out.float() * (i + 1) / 64).sum() for i, out in enumerate(outs.values()))
    loss.backward()
    return outs


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
def test_elementwise_ops_are_eager_autocasts_bit_for_bit_where_its_kernel_rounds_once(ws_csd, tmp_path, half):
    amp.set_half_dtype(half)
    fmt = FORMATS[half]
    configure(ws_csd, tmp_path)
    g = torch.Generator().manual_seed(3)
    x = torch.randn(16, 64, generator=g) * 3
    ours = {name: torch.nn.Parameter(torch.randn(16, 64, generator=g)) for name in OPS}
    theirs = {name: torch.nn.Parameter(p.detach().clone()) for name, p in ours.items()}
    holder = torch.nn.Module()
    holder.w = torch.nn.ParameterList(ours.values())
    cstorch.compile(holder, backend="wse_ws")
    step = cstorch.compile_step(lambda x: elementwise_step(fmt, ours, x))

    torch.manual_seed(7)  # the same dropout mask
    got = step(x)
    torch.manual_seed(7)
    with torch.autocast("cpu", dtype=fmt.proxy):
        want = elementwise_step(fmt, theirs, x)

    h = {name: fmt.round(fmt.round(ours[name].detach()) * fmt.round(x)) for name in OPS}
    checked = 0
    for name in OPS:
        for part, a, b in (("forward", got[name], want[name]), ("backward", ours[name].grad, theirs[name].grad)):
            assert a.dtype == b.dtype == (fmt.visible if part == "forward" else torch.float32), (name, part)
            if (name, part) not in EXCEPTIONS[half]:
                assert torch.equal(a, b), (name, part, (a != b).sum().item())
                checked += 1
                continue
            if part == "forward":
                # The contract's number; eager's is its own half kernel's on the same half inputs.
                assert torch.equal(a.float(), fmt.round(OPS[name](h[name]))), name
                assert torch.equal(b, OPS[name](h[name].to(fmt.proxy))), name
            else:  # a chain of such kernels: close
                spacing = torch.maximum(ulp(a.float(), fmt.proxy), ulp(b.float(), fmt.proxy))
                assert ((a - b).abs() <= 8 * spacing).all(), (name, ((a - b).abs() / spacing).max())
    assert checked == 2 * len(OPS) - len(EXCEPTIONS[half])


def test_cbfloat16_rounds_every_half_value_where_it_is_made(ws_csd, tmp_path):
    """No eager PyTorch computes in CB16, so the step is checked against the contract written out
    by hand: each op's float32 result on CB16 values, rounded to CB16 (formats.py, exhaustively
    tested on its own); a number in an add enters rounded, as in float16."""
    amp.set_half_dtype("cbfloat16")
    fmt = FORMATS["cbfloat16"]
    configure(ws_csd, tmp_path)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(16, 64, generator=g) * 3
    weights = {name: torch.nn.Parameter(torch.randn(16, 64, generator=g)) for name in OPS}
    holder = torch.nn.Module()
    holder.w = torch.nn.ParameterList(weights.values())
    cstorch.compile(holder, backend="wse_ws")
    step = cstorch.compile_step(lambda x: elementwise_step(fmt, weights, x))
    torch.manual_seed(7)
    got = step(x)

    def r(t):
        return fmt.round(t)

    def number(v):  # a number entering an add, sub or comparison on half values
        return float(r(torch.tensor(v)))

    # The ops that are several ops, each one's result rounded (numbers as the float16 test found).
    composed = {
        "exp": lambda h: r(torch.exp(r(h * 0.25))),
        "add_scalar": lambda h: r(h + number(0.3)),
        "sub_alpha": lambda h: r(torch.sub(h, h.flip(0), alpha=number(0.3))),
        "rsub": lambda h: r(number(0.7) - h),
        "div": lambda h: r(h / r(h.abs() + 1)),
        "rsqrt": lambda h: r(torch.rsqrt(r(h.abs() + 1))),
        "log": lambda h: r(torch.log(r(h.abs() + 1))),
        "sqrt": lambda h: r(torch.sqrt(h.abs())),
        "where": lambda h: torch.where(h > number(0.1), h, r(h * 0.1)),
        "reciprocal": lambda h: r(1 / r(h.abs() + number(0.5))),
        "in_place": lambda h: r(torch.add(r(h * 1.5), h, alpha=number(0.3))),
        # F.dropout: a half noise tensor, Bernoulli(0.7) / 0.7 (rounded: it is half), times h.
        "dropout": lambda h: r(h * r(torch.empty_like(h).bernoulli_(0.7).div_(0.7))),
    }
    for name, op in OPS.items():
        h = r(r(weights[name].detach()) * r(x))
        if name == "dropout":
            torch.manual_seed(7)  # the step's only random op: the same mask from the same state
        want = composed[name](h) if name in composed else r(op(h))
        assert got[name].dtype == torch.float32 and torch.equal(got[name], want), name
        assert torch.equal(r(got[name]), got[name])  # CB16 values
    assert not torch.equal(fmt.round(x), x.to(torch.float16).float())  # CB16 is not float16


def test_matrix_products_and_reductions_accumulate_in_float32_on_half_rounded_values(ws_csd, tmp_path):
    """A 1024-deep product and a 256-long sum: the step's result is exactly the half-rounded
    inputs' float32 product (sum) rounded; eager autocast sums in another order, so it agrees
    within 2·γ_n·Σ|aᵢbᵢ| (γ_n = n·2^-24: each float32 sum's bound) plus one half ulp."""
    fmt = FORMATS["float16"]
    configure(ws_csd, tmp_path)
    torch.manual_seed(0)
    net = torch.nn.Linear(1024, 64)
    twin = torch.nn.Linear(1024, 64)
    twin.load_state_dict(net.state_dict())
    cstorch.compile(net, backend="wse_ws")
    g = torch.Generator().manual_seed(5)
    x = torch.randn(256, 1024, generator=g)
    c = torch.randn(256, 64, generator=g)

    def body(model, x):
        out = model(x)
        (out.float() * c).sum().backward()
        return out, out.sum(0)

    step = cstorch.compile_step(lambda x: body(net, x))
    out, sums = step(x)
    with torch.autocast("cpu", dtype=torch.float16):
        eager_out, eager_sums = body(twin, x)

    w, b, xr, cr = fmt.round(net.weight.detach()), fmt.round(net.bias.detach()), fmt.round(x), fmt.round(c)
    contract = fmt.round(torch.addmm(b, xr, w.t()))
    assert out.dtype == torch.float16 and torch.equal(out.float(), contract)
    bound = 2 * 1024 * 2.0 ** -24 * (xr.abs() @ w.abs().t() + b.abs()) + ulp(contract, torch.float16)
    assert ((out.float() - eager_out.float()).abs() <= bound).all()

    assert torch.equal(sums.float(), fmt.round(out.float().sum(0)))
    bound = 2 * 256 * 2.0 ** -24 * out.float().abs().sum(0) + ulp(sums.float(), torch.float16)
    assert ((sums.float() - eager_sums.float()).abs() <= bound).all()

    # The backward's products: the weight gradient is round(round(x)ᵀ @ round(c))ᵀ, float32-summed.
    grad_w = fmt.round(xr.t() @ cr).t()
    assert net.weight.grad.dtype == torch.float32 and torch.equal(net.weight.grad, grad_w)
    bound = 2 * 256 * 2.0 ** -24 * (cr.abs().t() @ xr.abs()) + ulp(grad_w, torch.float16)
    assert ((net.weight.grad - twin.weight.grad).abs() <= bound).all()
    assert torch.equal(net.bias.grad, fmt.round(cr.sum(0)))


@pytest.mark.parametrize("half, visible", [("float16", torch.float16), ("bfloat16", torch.bfloat16),
                                           ("cbfloat16", torch.float32)])
def test_what_a_step_returns_and_a_closure_receives(ws_csd, tmp_path, half, visible):
    assert amp.set_half_dtype(half) == (torch.bfloat16 if half == "bfloat16" else torch.float16)
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    seen = []

    @cstorch.step_closure
    def look(logits, loss, count):
        seen.append((logits.dtype, loss.dtype, count.dtype))

    def body(x, y):
        t.optimizer.zero_grad()
        logits = t.compiled(x)
        loss = t.loss_fn(logits, y)
        loss.backward()
        t.optimizer.step()
        count = (logits.argmax(1) == y).sum()
        look(logits, loss, count)
        return logits, loss, count

    step = cstorch.compile_step(body)
    for x, y in batches(2):
        logits, loss, count = step(x, y)
        assert (logits.dtype, loss.dtype, count.dtype) == (visible, torch.float32, torch.int64)
        assert all(p.dtype == p.grad.dtype == torch.float32 for p in t.net.parameters())
    assert seen == [(visible, torch.float32, torch.int64)] * 2
    assert process_backend.current().run.program.half == half


def test_cbfloat16_keeps_values_beyond_float16s_range(ws_csd, tmp_path):
    amp.set_half_dtype("cbfloat16")
    configure(ws_csd, tmp_path)
    net = torch.nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        net.weight.fill_(1000.0)
    compiled = cstorch.compile(net, backend="wse_ws")
    step = cstorch.compile_step(lambda x: compiled(x))
    x = torch.full((3, 4), 30.0)
    out = step(x)  # 4 · 30 · 1000 = 120000: float16's largest is 65504
    # CB16's quantum there is 2^7: 120000 = 937.5 quanta, a tie, to even: 938 · 128.
    assert out.dtype == torch.float32 and torch.equal(out, torch.full((3, 2), 120064.0))
    assert torch.isinf(x.half() @ net.weight.detach().half().t()).all()  # what float16 would give


def test_set_half_dtype_takes_the_real_apis_names_and_is_refused_after_the_first_step(ws_csd, tmp_path):
    for value, proxy, name in [("float16", torch.float16, "float16"), (torch.bfloat16, torch.bfloat16, "bfloat16"),
                               ("cbfloat16", torch.float16, "cbfloat16"), (torch.float16, torch.float16, "float16")]:
        assert amp.set_half_dtype(value) is proxy
        assert amp.get_half_dtype() is proxy and amp.get_half_dtype_str() == name
    amp.use_bfloat16(True)
    assert amp.get_half_dtype_str() == "bfloat16"
    amp.use_bfloat16(False)
    assert amp.get_half_dtype_str() == "float16"
    for bad in ("fp16", "float32", torch.float32, 16, None):
        with pytest.raises(InvalidArgument, match=r'Invalid half dtype: .*Accepted values are: "float16", "bfloat16", '
                                                  r'"cbfloat16", torch.float16, torch.bfloat16.'):
            amp.set_half_dtype(bad)
    assert amp.get_half_dtype_str() == "float16"  # a refused value changes nothing

    amp.set_half_dtype("cbfloat16")
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    t.step(*batches(1)[0])
    with pytest.raises(InvalidState, match="cannot change to float16: the first step compiled this run's program "
                                           "in cbfloat16") as refused:
        amp.set_half_dtype("float16")
    assert "before the first compile_step call" in str(refused.value)
    with pytest.raises(InvalidState):
        amp.use_bfloat16(True)
    amp.set_half_dtype("cbfloat16")  # what it is: nothing changes, nothing to refuse
    assert amp.get_half_dtype_str() == "cbfloat16" and process_backend.current().run.program.half == "cbfloat16"


def test_each_half_dtype_is_its_own_program(ws_csd, tmp_path):
    """The captured program is the same text for float16 and cbfloat16 (float16 stands for CB16),
    but not the same program: another checksum, its half dtype in program.json and the log."""
    checksums = []
    for half in ("float16", "cbfloat16", "bfloat16"):
        process_backend.reset()
        amp.set_half_dtype(half)
        configure(ws_csd, tmp_path)
        t = Trainer(model())
        t.step(*batches(1)[0])
        program = process_backend.current().run.program
        checksums.append(program.checksum)
        directory = tmp_path / "compile" / f"cs_{program.checksum[:16]}"
        assert json.loads((directory / "program.json").read_text())["half_dtype"] == half
        assert f"mixed precision: float32 weights, {half} compute" in (directory / "compile.log").read_text()
    assert len(set(checksums)) == 3


def test_what_the_emulation_cannot_carry_is_refused_before_anything_runs(ws_csd, tmp_path):
    """A half persistent tensor written in place (its carrier is not it), and the bits of a half
    value (a carrier's are float32's): INVALID_ARGUMENT at the first step, saying what to do;
    nothing was opened on csd, and the same process may compile a corrected step."""
    configure(ws_csd, tmp_path)
    net = model()
    net.register_buffer("seen", torch.zeros(2, dtype=torch.float16))
    compiled = cstorch.compile(net, backend="wse_ws")
    x = batches(1)[0][0]

    def counts(x):
        net.seen.add_(compiled(x).sum(0))  # a float16 running sum, kept across steps
        return net.seen

    with pytest.raises(InvalidArgument, match=r"writes a torch.float16 persistent tensor or step input in place "
                                              r"\(aten.add_.Tensor\).*Keep the tensor in float32") as refused:
        cstorch.compile_step(counts)(x)
    assert "the system keeps persistent state in float32 (001)" in str(refused.value)
    assert torch.equal(net.seen, torch.zeros(2, dtype=torch.float16))  # the capture left no trace

    with pytest.raises(InvalidArgument, match=r"reinterprets the bits of a torch.float16 tensor .*Compare or store "
                                              r"the values instead"):
        cstorch.compile_step(lambda x: compiled(x).view(torch.int16))(x)

    with ws_csd.client() as c:
        assert all(run["status"] == "CLOSED" for run in c.runs_list()["runs"])  # none opened by these
    logits = cstorch.compile_step(lambda x: compiled(x))(x)  # a step it can carry compiles
    assert logits.dtype == torch.float16
