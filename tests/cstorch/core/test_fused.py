"""The compiled step (core/fused.py): the captured program compiled into fused kernels by Inductor,
against the replay it replaces.

These tests run the compiler on one small program (an MLP 8→32→2, AdamW: its lerp, addcmul and
sqrt are the ops whose CPU kernels Inductor computes differently) in one compile directory shared
by the module, so Inductor's cache built by the first test serves the rest. The rest of the suite
runs the replay ($CSTORCH_FUSE unset means off there: tests/cstorch/conftest.py); the numerics
tests run against the compiler with `CSTORCH_FUSE=1 pytest tests/cstorch/core/test_half_precision.py
tests/cstorch/core/test_mixed_precision.py` (docs/cstorch/implementation.md)."""

import os

import pytest
import torch
from torch._dynamo.utils import counters

import csadmin.cstorch as cstorch
from csadmin.cstorch import amp
from csadmin.cstorch.backend import process_backend
from csadmin.cstorch.core import fused
from tests.cstorch.helpers import batches, model

aten = torch.ops.aten


@pytest.fixture(scope="module")
def shared_compile_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fused-compile"))


def start(ws_csd, tmp_path, compile_dir: str, half: str = "float16", **kwargs):
    amp.set_half_dtype(half)
    cstorch.configure(model_dir=str(tmp_path / "model"), compile_dir=compile_dir,
                      mgmt_address=ws_csd.connection_file, key=ws_csd.admin_key, **kwargs)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.AdamW(net.parameters(), lr=0.01)

    @cstorch.compile_step
    def step(x, y):
        optimizer.zero_grad()
        logits = compiled(x)
        loss = torch.nn.functional.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        return logits, loss

    return step


def compile_log(program) -> str:
    with open(os.path.join(program.directory, "compile.log")) as f:
        return f.read()


@pytest.mark.parametrize("half", ["float16", "bfloat16", "cbfloat16"])
def test_the_fused_step_computes_the_replays_values_bit_for_bit(ws_csd, tmp_path, shared_compile_dir, half,
                                                                 monkeypatch):
    monkeypatch.setenv(fused.ENV, "1")
    step = start(ws_csd, tmp_path, shared_compile_dir, half)
    data = batches(4)
    step(*data[0])
    program = process_backend.current().run.program
    assert program.fused is not None
    if not program.cached:
        assert "fused by Inductor (C++)" in compile_log(program)
    replay_state = [t.detach().clone() for t in program.state]
    for x, y in data[1:]:
        logits, loss = step(x, y)
        want = program.forward(None, [x, y], replay_state)
        assert torch.equal(logits, want[0]) and torch.equal(loss, want[1])
    for got, want in zip(program.state, replay_state):  # weights, AdamW's moments, step counts
        assert torch.equal(got, want)


def test_a_second_compile_of_the_program_reuses_inductors_artifacts(ws_csd, tmp_path, shared_compile_dir,
                                                                    monkeypatch):
    monkeypatch.setenv(fused.ENV, "1")
    step = start(ws_csd, tmp_path / "first", shared_compile_dir)
    step(*batches(1)[0])
    first = process_backend.current().run.program
    directory = os.path.join(shared_compile_dir, f"cs_{first.checksum[:16]}", "inductor")
    assert os.path.isdir(directory) and os.listdir(directory)
    process_backend.reset()
    hits = counters["inductor"]["fxgraph_cache_hit"]
    step = start(ws_csd, tmp_path / "second", shared_compile_dir)
    step(*batches(1)[0])
    second = process_backend.current().run.program
    assert second.checksum == first.checksum and second.fused is not None
    assert counters["inductor"]["fxgraph_cache_hit"] == hits + 1  # Inductor's cache served: nothing built


def test_validate_only_compiles_nothing_compile_only_builds_the_kernels(ws_csd, tmp_path, monkeypatch):
    monkeypatch.setenv(fused.ENV, "1")
    step = start(ws_csd, tmp_path, str(tmp_path / "validate"), validate_only=True)
    step(*batches(1)[0])
    assert process_backend.current().run.program.fused is None
    assert not os.path.exists(tmp_path / "validate")
    process_backend.reset()
    step = start(ws_csd, tmp_path, str(tmp_path / "compile"), compile_only=True)
    step(*batches(1)[0])
    program = process_backend.current().run.program
    assert program.fused is not None
    assert os.listdir(os.path.join(program.directory, "inductor"))


def test_the_setting_off_runs_the_replay_and_the_log_says_so(ws_csd, tmp_path, monkeypatch):
    monkeypatch.setenv(fused.ENV, "0")
    step = start(ws_csd, tmp_path, str(tmp_path / "compile"))
    step(*batches(1)[0])
    program = process_backend.current().run.program
    assert program.fused is None
    assert "not fused ($CSTORCH_FUSE=0)" in compile_log(program)


def test_without_a_cpp_compiler_the_step_runs_as_the_replay_and_says_why_once(ws_csd, tmp_path, monkeypatch,
                                                                             capfd):
    monkeypatch.setenv(fused.ENV, "1")
    monkeypatch.setenv("CXX", "no-such-compiler++")
    step = start(ws_csd, tmp_path, str(tmp_path / "compile"))
    data = batches(3)
    losses = [step(x, y)[1] for x, y in data]
    program = process_backend.current().run.program
    assert program.fused is None and all(torch.isfinite(loss) for loss in losses)
    err = capfd.readouterr().err
    assert err.count("not fused: no C++ compiler ('no-such-compiler++' is not on PATH") == 1
    assert "the step runs as the replay" in compile_log(program)


def test_ops_inductor_would_compute_differently_stay_pytorchs_kernels():
    graph = torch.fx.Graph()
    inputs, state = graph.placeholder("inputs"), graph.placeholder("state")
    a = graph.call_function(lambda s, i: s[i], (state, 0))
    a.target = __import__("operator").getitem
    x = graph.call_function(__import__("operator").getitem, (inputs, 0))
    mm = graph.call_function(aten.mm.default, (x, a))
    added = graph.call_function(aten.add.Tensor, (mm, x))
    lerped = graph.call_function(aten.lerp_.Scalar, (a, added, 0.1))
    graph.output((added, lerped))
    flat = fused.flat_module(torch.fx.GraphModule(torch.nn.Module(), graph), 1, 1)
    targets = [n.target for n in flat.graph.nodes if n.op == "call_function"]
    assert targets[0].namespace == "cstorch_fused" and "mm" in targets[0].name()  # a product: PyTorch's kernel
    assert aten.add.Tensor in targets  # exact arithmetic: Inductor's code
    assert targets[2].namespace == "cstorch_fused" and "lerp" in targets[2].name()  # in place, returning nothing
    assert not targets[2]._schema.returns
    x0, s0 = torch.randn(4, 4), torch.randn(4, 4)
    s1 = s0.clone()
    got = flat(x0, s0)
    want_added = x0 @ s1 + x0
    assert torch.equal(got[0], want_added) and torch.equal(s0, s1.lerp_(want_added, 0.1))


def test_the_fused_roundings_are_the_formats_on_every_kind_of_float32(tmp_path):
    """Each format's rounding, compiled by Inductor as the fused program computes it (one
    expression), against amp/formats.py's on a million random bit patterns (every binade, signs,
    subnormals, inf, NaN) and the formats' edges."""
    from csadmin.cstorch.amp.formats import FORMATS

    graph = torch.fx.Graph()
    inputs, state = graph.placeholder("inputs"), graph.placeholder("state")
    x = graph.call_function(__import__("operator").getitem, (inputs, 0))
    outs = [graph.call_function(FORMATS[name].round, (x,)) for name in ("float16", "bfloat16", "cbfloat16")]
    graph.output(tuple(outs))
    bits = torch.randint(-2 ** 31, 2 ** 31 - 1, (1 << 20,), generator=torch.Generator().manual_seed(5),
                         dtype=torch.int64).to(torch.int32)
    edges = torch.tensor([0.0, -0.0, 65504.0, 65520.0, 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** 32,
                          4294967296.0 * (1 - 2.0 ** -11), 2.0 ** -39, 2.0 ** -40, -2.0 ** -41, 1e-13, -1e-13,
                          float("inf"), float("-inf"), float("nan"), 3.4e38])
    values = torch.cat([bits.view(torch.float32), edges])
    run = fused.compile_program(torch.fx.GraphModule(torch.nn.Module(), graph), [values], [],
                                str(tmp_path / "inductor"))
    for name, got in zip(("float16", "bfloat16", "cbfloat16"), run(values)):
        want = FORMATS[name].round(values)
        same = (got.view(torch.int32) == want.view(torch.int32)) | (got.isnan() & want.isnan())
        assert same.all(), (name, values[~same][:5])
