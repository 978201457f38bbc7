"""The 2.x library on the GPU backend: the later optimizers and metrics on the CUDA device.

    python -m pytest tests/cstorch/backend/test_gpu_backend_library.py -v

The GPU backend runs a step eagerly under CUDA autocast to the half dtype; what the library adds
must run there as it runs on the system: an optimizer's state made on the parameters' device and
its steps torch.optim's (on the same device, under the same autocast), a metric's state updated
from CUDA tensors and its value the one computed by hand. Skipped, with the reason, where there
is no CUDA device (CI); run on one by hand (bench/cstorch_cuda.py runs every CUDA test).
"""

import pytest
import torch

import csadmin.cstorch as cstorch
from tests.cstorch.helpers import batches, model
from tests.cstorch.metrics.test_metrics_in_step import ProbabilityError
from tests.cstorch.v2 import input_fn

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine: the GPU "
                                "backend runs where torch.cuda.is_available()")

STEPS = 6
HALF_EPS = torch.finfo(torch.float16).eps
TWINS = {  # ours, torch.optim's, the arguments both take
    "ASGD": (cstorch.optim.ASGD, torch.optim.ASGD, dict(lr=0.02, t0=2)),
    "Adadelta": (cstorch.optim.Adadelta, torch.optim.Adadelta, dict(lr=0.5, rho=0.8)),
    "Adagrad": (cstorch.optim.Adagrad, torch.optim.Adagrad, dict(lr=0.05, lr_decay=0.01, eps=1e-10)),
    "Adamax": (cstorch.optim.Adamax, torch.optim.Adamax, dict(lr=0.01, eps=1e-8)),
    "RAdam": (cstorch.optim.RAdam, torch.optim.RAdam, dict(lr=0.01, eps=1e-8)),
    "RMSprop": (cstorch.optim.RMSprop, torch.optim.RMSprop, dict(lr=0.01, momentum=0.5, centered=True)),
    "Rprop": (cstorch.optim.Rprop, torch.optim.Rprop, dict(lr=0.01)),
}


def _gpu(tmp_path):
    return cstorch.backend("GPU", artifact_dir=str(tmp_path / "out"))


@pytest.mark.parametrize("name", list(TWINS))
def test_a_later_optimizer_on_the_gpu_takes_torch_optims_steps(tmp_path, name):
    ours, theirs, kwargs = TWINS[name]
    backend = _gpu(tmp_path)
    with backend.device:
        net = model(0)  # initialised by the CUDA generator: the reference starts from its copy
    start = [p.detach().clone() for p in net.parameters()]
    compiled = cstorch.compile(net, backend)
    optimizer = ours(net.parameters(), **kwargs)

    @cstorch.trace
    def training_step(batch):
        inputs, targets = batch
        loss = torch.nn.functional.cross_entropy(compiled(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=STEPS)
    for batch in executor:
        training_step(batch)
    states = [t for s in optimizer.state.values() for t in s.values() if isinstance(t, torch.Tensor) and t.dim()]
    assert states and all(t.device.type == "cuda" for t in states)

    reference = model(0).cuda()
    with torch.no_grad():
        for p, value in zip(reference.parameters(), start):
            p.copy_(value)
    twin = theirs(reference.parameters(), foreach=False, **kwargs)
    for inputs, targets in batches(STEPS, seed=1):
        with torch.autocast("cuda", dtype=torch.float16):
            torch.nn.functional.cross_entropy(reference(inputs.cuda()), targets.cuda()).backward()
            twin.step()
            twin.zero_grad()
    # The same math in a different order (torch's fused expressions, float64 step factors here)
    # rounds differently; float16 products carry that through six steps: held to the numerics
    # contract, a float16 epsilon.
    for a, b in zip(net.parameters(), reference.parameters()):
        torch.testing.assert_close(a, b, rtol=HALF_EPS, atol=HALF_EPS / 10)
    assert any(not torch.equal(a, b) for a, b in zip(net.parameters(), start))  # it trained


def test_metrics_on_the_gpu_are_the_values_computed_by_hand(tmp_path):
    backend = _gpu(tmp_path)
    with backend.device:  # the metrics' state too, as scripts make them in the model's __init__
        net = model(3)
        error, accuracy, dice = (ProbabilityError("probability_error"), cstorch.metrics.AccuracyMetric("accuracy"),
                                 cstorch.metrics.DiceCoefficientMetric(2))
    assert error.total.device.type == "cuda"
    compiled = cstorch.compile(net, backend)
    compiled.eval()

    @cstorch.trace
    def eval_step(batch):
        inputs, targets = batch
        outputs = compiled(inputs)
        accuracy(labels=targets, predictions=outputs.argmax(-1))
        dice(labels=targets, predictions=outputs.argmax(-1))
        return error(outputs, targets)

    with torch.no_grad():
        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=STEPS):
            eval_step(batch)

    with torch.no_grad(), torch.autocast("cuda", dtype=torch.float16):
        outputs = [(net(x.cuda()).float().cpu(), y) for x, y in batches(STEPS, seed=1)]
    predictions = torch.cat([o.argmax(-1) for o, _ in outputs])
    labels = torch.cat([y for _, y in outputs])
    probabilities = torch.cat([o.softmax(-1)[:, 1] for o, _ in outputs])
    assert float(accuracy) == pytest.approx((predictions == labels).double().mean().item(), abs=1e-6)
    assert float(error) == pytest.approx((probabilities - labels).abs().mean().item(), rel=1e-5)
    intersection = ((predictions == 1) & (labels == 1)).sum().item()
    union_sum = (predictions == 1).sum().item() + (labels == 1).sum().item()
    dice_1 = 2 * intersection / union_sum
    intersection_0 = ((predictions == 0) & (labels == 0)).sum().item()
    dice_0 = 2 * intersection_0 / ((predictions == 0).sum().item() + (labels == 0).sum().item())
    assert float(dice) == pytest.approx((dice_0 + dice_1) / 2, rel=1e-5)
    assert accuracy.num_updates == STEPS  # eager: every step updates
