"""A model on a CUDA device (`model.cuda()` before `cstorch.compile`), against a real csd: the
captured program runs there, under CUDA's autocast as well as the CPU's, with the numerics
contract of the CPU (tests/cstorch/core/test_half_precision.py): half values rounded to the run's
format in float32 carriers, float32 arithmetic, the same dtypes handed back. Skipped, saying so,
where torch sees no CUDA device; bench/cstorch_cuda.py runs these and times the device."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch import amp
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.amp.formats import FORMATS
from tests.cstorch.helpers import Trainer, batches, configure, model

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="no CUDA device: torch.cuda.is_available() is False here")

HALVES = ["float16", "bfloat16", "cbfloat16"]


def ulp(values: torch.Tensor, half: str) -> torch.Tensor:
    """The spacing of the format `half` at each of `values` (float32): 2^(max(e, e_min) - m),
    with e the binade, e_min the smallest normal's and m the mantissa bits."""
    mantissa, e_min = {"float16": (10, -14), "bfloat16": (7, -126), "cbfloat16": (9, -30)}[half]
    _, exponent = torch.frexp(values)
    return torch.ldexp(torch.ones_like(values), torch.clamp(exponent - 1, min=e_min) - mantissa)


@pytest.mark.parametrize("half", HALVES)
def test_an_eval_step_on_cuda_is_the_contracts_number_there(ws_csd, tmp_path, half):
    """Each product's inputs and output rounded to the format, float32 in between (cuBLAS in
    float32, TF32 off as torch's default), bit for bit against the same calls made by hand."""
    amp.set_half_dtype(half)
    fmt = FORMATS[half]
    configure(ws_csd, tmp_path)
    net = model().cuda()
    compiled = cstorch.compile(net, backend="wse_ws")
    compiled.eval()
    step = cstorch.compile_step(lambda x: compiled(x))
    (l1, _, l2) = net
    r = fmt.round
    with torch.no_grad():
        for x, _ in batches(3):
            x = x.cuda()
            logits = step(x)
            hidden = torch.relu(r(torch.addmm(r(l1.bias), r(x), r(l1.weight).t())))
            want = r(torch.addmm(r(l2.bias), hidden, r(l2.weight).t()))
            assert logits.device.type == "cuda" and logits.dtype == fmt.visible
            assert torch.equal(logits.float(), want)
    program = process_backend.current().run.program
    assert program.half == half and program.est_samples_per_sec > 0
    assert all(t.device.type == "cuda" for t in program.state)


@pytest.mark.parametrize("half", HALVES)
def test_training_on_cuda_keeps_float32_weights_there_and_agrees_with_the_cpus_program(ws_csd, tmp_path, half):
    """The same training on the CPU and on CUDA: the same contract, different kernels (summation
    orders, transcendental approximations). Step 1's logits, from the same weights, differ by at
    most a unit in the format's last place; the runs learn alike."""
    fmt = FORMATS[half]
    losses, first_logits = {}, {}
    for device in ("cpu", "cuda"):
        process_backend.reset()  # one run per process: a new "process" for each device
        amp.set_half_dtype(half)
        configure(ws_csd, tmp_path / device)
        t = Trainer(model().to(device), logits=True)
        losses[device] = []
        for x, y in batches(20):
            logits, loss = t.step(x.to(device), y.to(device))
            assert logits.device.type == loss.device.type == device
            assert logits.dtype == fmt.visible and loss.dtype == torch.float32
            first_logits.setdefault(device, logits.float().cpu())
            losses[device].append(loss.item())
        assert all(p.device.type == device and p.dtype == p.grad.dtype == torch.float32 for p in t.net.parameters())
        process_backend.current().run.finish()
    a, b = first_logits["cpu"], first_logits["cuda"]
    assert ((a - b).abs() <= ulp(torch.maximum(a.abs(), b.abs()), half)).all()
    for device in ("cpu", "cuda"):
        assert losses[device][-1] < losses[device][0] / 2, losses  # it learns
    assert all(abs(x - y) <= 0.1 * abs(x) for x, y in zip(losses["cpu"], losses["cuda"])), losses


def test_cbfloat16_on_cuda_keeps_values_beyond_float16s_range(ws_csd, tmp_path):
    amp.set_half_dtype("cbfloat16")
    configure(ws_csd, tmp_path)
    net = torch.nn.Linear(4, 2, bias=False).cuda()
    with torch.no_grad():
        net.weight.fill_(1000.0)
    compiled = cstorch.compile(net, backend="wse_ws")
    step = cstorch.compile_step(lambda x: compiled(x))
    out = step(torch.full((3, 4), 30.0, device="cuda"))  # 120000, a CB16 tie: 120064
    assert out.device.type == "cuda" and out.dtype == torch.float32
    assert torch.equal(out.cpu(), torch.full((3, 2), 120064.0))
