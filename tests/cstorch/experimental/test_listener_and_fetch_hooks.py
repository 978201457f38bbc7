"""The hooks ModelZoo 2.10's callbacks register on every fit: the traced-tensor listener
(cstorch.experimental.listener: its tensor-listener callbacks) and the tensors a CSX run hands
back (backend.ltc_backend: DurationProfiler's timestamps). On CSX against csd: the listener hears
each tensor the traced step makes, named by scope and function, and what it computes is part of
the step; the fetch hooks hear every tensor a step closure receives, every step."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend.ltc_backend import register_after_tensor_to_cpu, register_before_tensor_to_cpu
from csadmin import errors as cstorch_errors
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


def test_a_closures_tensors_are_fetched_when_it_runs_after_the_closures_before_it(ws_csd, tmp_path):
    """As on the system, each closure's tensors are fetched just before it runs: DurationProfiler
    marks a batch's start in one closure and its end in the fetch hook of a later one's loss."""
    backend = csx(ws_csd, tmp_path)
    seen = []
    handle = register_after_tensor_to_cpu(lambda tensor, name: seen.append(f"fetch {name}"))
    with backend.device:
        net = model(0)
    compiled = cstorch.compile(net, backend)

    @cstorch.step_closure
    def begin():
        seen.append("begin")

    @cstorch.step_closure
    def check(loss):
        seen.append("check")

    @cstorch.step_closure
    def end():
        seen.append("end")

    @cstorch.trace
    def step(batch):
        begin()
        inputs, targets = batch
        loss = torch.nn.functional.cross_entropy(compiled(inputs), targets)
        check(loss)
        end()
        return loss

    for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=2):
        step(batch)
    assert seen == ["begin", "fetch check.0", "check", "end"] * 2
    handle.remove()


def test_no_hook_is_called_on_the_cpu_backend(tmp_path):
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    heard = []
    register_traced_tensor_hook(lambda tensor, name: heard.append(name))
    register_after_tensor_to_cpu(lambda tensor, name: heard.append(name))
    assert len(_run(backend)) == STEPS and heard == []



def test_compression_marks_the_filtered_weights_on_csx_only(ws_csd, tmp_path):
    """ModelZoo's WeightCompression callback: `model.apply(Compression(...))` after compile."""
    backend = csx(ws_csd, tmp_path)
    with backend.device:
        net = model(0)
    compiled = cstorch.compile(net, backend)
    net.apply(cstorch.experimental.Compression(format="mx8-e3m4", param_filter="0.*"))
    before = [p.detach().clone() for p in net.parameters()]
    compiled(torch.zeros(2, 8))
    assert net[0].weight.cs_attributes == {"cs.compress": "mx8-e3m4"} and net[0].bias.cs_attributes
    assert not hasattr(net[2].weight, "cs_attributes")
    assert all(torch.equal(a, b) for a, b in zip(before, net.parameters()))  # a hint: no value changes
    with pytest.raises(cstorch_errors.InvalidArgument, match='Expected format to be one of .* but got "mx4"'):
        cstorch.experimental.Compression(format="mx4", param_filter="*")


def test_the_implicit_loop_helpers_the_slice_is_the_real_ones_and_the_loops_are_refused():
    from csadmin.cstorch import experimental

    tokens = torch.arange(24).view(2, 4, 3)
    # the real wheel's answers for these inputs
    assert experimental.get_loop_iteration_slice(tokens, torch.tensor([[1], [3]])).tolist() == [[[3, 4, 5]],
                                                                                                 [[21, 22, 23]]]
    assert experimental.get_loop_iteration_slice(torch.arange(8).view(2, 4),
                                                 torch.tensor([[1, 2], [3, 0]])).tolist() == [[1, 2], [7, 4]]
    with pytest.raises(cstorch_errors.InvalidState, match="start_implicit_loop: autoregressive implicit loops"):
        experimental.start_implicit_loop(tokens, 1)
    with pytest.raises(cstorch_errors.InvalidState, match="update_implicit_loop"):
        experimental.update_implicit_loop(tokens, tokens, tokens, tokens, 0)
