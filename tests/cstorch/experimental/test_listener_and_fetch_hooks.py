"""The hooks ModelZoo 2.10's callbacks register on every fit: the traced-tensor listener
(cstorch.experimental.listener: its tensor-listener callbacks) and the tensors a CSX run hands
back (backend.ltc_backend: DurationProfiler's timestamps). On CSX against csd: the listener hears
each tensor the traced step makes, named by scope and function, and what it computes is part of
the step; the fetch hooks hear every tensor a step closure receives, every step."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend.ltc_backend import register_after_tensor_to_cpu, register_before_tensor_to_cpu
from csadmin.cstorch.experimental.listener import register_traced_tensor_hook
from tests.cstorch.helpers import model
from tests.cstorch.v2 import csx, input_fn

STEPS = 4


def _run(backend, body_extra=None):
    with backend.device:
        net = model(0)
    compiled = cstorch.compile(net, backend)
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)
    losses = []

    @cstorch.step_closure
    def record(loss):
        losses.append(loss.item())

    @cstorch.trace
    def step(batch):
        inputs, targets = batch
        with cstorch.name_scope("head"):
            logits = compiled(inputs).mul(2.0).mul(0.5)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        record(loss)
        return loss

    for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=STEPS):
        step(batch)
    return losses


def test_the_listener_hears_the_traced_tensors_and_its_summaries_run_every_step(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    heard, norms = [], []
    handle = register_traced_tensor_hook(lambda tensor, name: heard.append((name, tuple(tensor.shape))))

    def norm_of_logits(tensor, name):
        if name == "head.mul.1":
            cstorch.step_closure(lambda n: norms.append(n.item()))(tensor.norm())

    register_traced_tensor_hook(norm_of_logits)
    _run(backend)
    names = [name for name, _ in heard]
    assert "head.mul" in names and "head.mul.1" in names and ("head.mul.1", (32, 2)) in heard
    assert "cross_entropy" in names and not any(n.startswith(("clone", "detach")) for n in names)
    assert len(heard) == len(set(names))  # heard at the capture only: the replayed steps run no Python
    assert len(norms) == STEPS and len(set(norms)) > 1  # the hook's norm is computed at every step
    handle.remove()


def test_the_fetch_hooks_hear_each_tensor_a_step_closure_receives(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    before, after = [], []
    register_before_tensor_to_cpu(lambda tensor, name: before.append(name))
    handle = register_after_tensor_to_cpu(lambda tensor, name: after.append((name, tensor.item())))
    losses = _run(backend)
    assert before == ["record.0"] * STEPS and [name for name, _ in after] == ["record.0"] * STEPS
    assert [value for _, value in after] == pytest.approx(losses)
    handle.remove()


def test_no_hook_is_called_on_the_cpu_backend(tmp_path):
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    heard = []
    register_traced_tensor_hook(lambda tensor, name: heard.append(name))
    register_after_tensor_to_cpu(lambda tensor, name: heard.append(name))
    assert len(_run(backend)) == STEPS and heard == []

