"""The backend object scripts hold, against a real csd: R1.8's `compiled_model.backend` (its
`name`, `is_wse()`, `is_gpu()`, `device`, `str()`), `compiled_model.device` and `model.device`,
as the vendor runner's logging closure and its parameter-norm summary use them."""

import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import Trainer, as_the_system, batches, configure, model


def test_compiled_model_backend_is_the_processs_backend_as_the_runner_reads_it(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    backend = t.compiled.backend
    assert backend is process_backend.current()
    assert backend.name == "WSE_WS" and str(backend) == "wse_ws"
    assert backend.is_wse() and not backend.is_gpu() and backend.is_csx and not backend.is_cpu
    # backend.device is where tensors are made (the later releases' `with backend.device:`, "CSX");
    # the torch device the math runs on is what compiled_model.device and model.device say.
    assert str(backend.device) == "CSX" and backend.device.torch_device == backend.torch_device
    assert backend.torch_device == torch.device("cpu") == t.compiled.device == t.net.device

    logged = []

    @cstorch.step_closure
    def post_training_step(loss):  # the vendor template's logging line
        logged.append(f"| Train: {t.compiled.backend.name} Step={len(logged) + 1}, Loss={loss.item():.5f}")

    for x, y in batches(2):
        post_training_step(t.step(x, y))
    assert logged[0].startswith("| Train: WSE_WS Step=1, Loss=")


def test_model_device_is_where_tensors_made_in_the_step_go(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")

    @cstorch.compile_step
    def step(x):
        return compiled(x) + torch.ones(2).to(net.device) + torch.zeros(()).to(compiled.device)

    with torch.no_grad():
        (x, _), = batches(1)
        with as_the_system():
            expected = net(x) + torch.ones(2) + torch.zeros(())
        assert torch.equal(step(x), expected)


def test_a_model_with_its_own_device_attribute_keeps_it(ws_csd, tmp_path):
    class Net(torch.nn.Module):
        device = "its own"

        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 2)

    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(Net(), backend="wse_ws")
    assert compiled.model.device == "its own" and compiled.device == torch.device("cpu")
