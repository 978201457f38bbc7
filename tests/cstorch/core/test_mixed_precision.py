"""Mixed precision as the system does it (001, "Floating Point Precision"), against a real csd:
every compile_step computes in float16 (bfloat16 after `use_bfloat16(True)`) without the step
asking, because the runtime captures it under autocast and the program holds the casts; the
weights, their gradients and the optimizer state stay float32 and the weight update is float32
math; a step's own `with cstorch.amp.autocast():` changes nothing."""

import pytest
import torch
from torch import fx
from torch.utils._pytree import tree_flatten

import csadmin.cstorch as cstorch
from csadmin.cstorch import amp
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import Trainer, as_the_system, batches, configure, model

HALF = (torch.float16, torch.bfloat16)


class _Dtypes(fx.Interpreter):
    """Runs a captured program and records, for every aten op, the dtypes of its tensors."""

    def __init__(self, module):
        super().__init__(module)
        self.ops: list[tuple] = []  # (op, mutates, {dtypes of its tensor arguments and results})

    def call_function(self, target, args, kwargs):
        out = super().call_function(target, args, kwargs)
        if isinstance(target, torch._ops.OpOverload):
            flat, _ = tree_flatten((args, kwargs, out))
            self.ops.append((target, target._schema.is_mutable,
                             {t.dtype for t in flat if isinstance(t, torch.Tensor)}))
        return out


def _program_ops(program, args) -> list[tuple]:
    """The program's ops with their dtypes, run on copies of its state (the run's is untouched)."""
    inputs = program.signature.tensors(args, {}, program.name)
    interpreter = _Dtypes(program.module)
    with torch.no_grad():
        interpreter.run(inputs, [t.detach().clone() for t in program.state])
    return interpreter.ops


def test_a_training_step_computes_in_float16_unasked_and_updates_float32_weights_in_float32(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.Adam(net.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    @cstorch.compile_step
    def step(x, y):  # no autocast here: the runtime inserts the casts (001)
        optimizer.zero_grad()
        logits = compiled(x)
        loss = loss_fn(logits, y)
        loss.backward()
        optimizer.step()
        return logits, loss

    # The twin: the same float32 weights and Adam, updated eagerly outside any autocast from the
    # gradients each replayed step leaves on the parameters. Bit-equal weights after every step
    # mean the runtime's update is this float32 update (a float16 one rounds differently).
    twin = model()
    twin_optimizer = cstorch.optim.Adam(twin.parameters(), lr=0.01)
    for x, y in batches(8):
        logits, loss = step(x, y)
        assert logits.dtype == torch.float16  # the forward ran in half precision, at capture and replay
        assert loss.dtype == torch.float32  # autocast computes cross entropy in float32
        for p, q in zip(net.parameters(), twin.parameters()):
            assert p.dtype == p.grad.dtype == torch.float32
            q.grad = p.grad.clone()
        twin_optimizer.step()
        for p, q in zip(net.parameters(), twin.parameters()):
            assert torch.equal(p, q)
    assert all(t.dtype == torch.float32 for s in optimizer.state.values() for t in s.values())

    program = process_backend.current().run.program
    code = (tmp_path / "compile" / f"cs_{program.checksum[:16]}" / "program.py").read_text()
    assert "dtype = torch.float16" in code  # the captured program holds the casts
    log = (tmp_path / "compile" / f"cs_{program.checksum[:16]}" / "compile.log").read_text()
    assert "mixed precision: float32 weights, float16 compute" in log
    ops = _program_ops(program, batches(1)[0])
    assert any(op is torch.ops.aten.addmm.default and dtypes == {torch.float16} for op, _, dtypes in ops)
    # Everything written in place (weights, Adam's moments, its step counter) is written from
    # full-precision tensors only: no half value reaches the update.
    writes = [(op, dtypes) for op, mutates, dtypes in ops if mutates]
    assert len(writes) > 10 and all(not dtypes & set(HALF) for _, dtypes in writes), writes


@pytest.mark.parametrize("bfloat16", [False, True])
def test_an_eval_step_computes_in_the_half_type_chosen(ws_csd, tmp_path, bfloat16):
    half = torch.bfloat16 if bfloat16 else torch.float16
    configure(ws_csd, tmp_path)
    amp.use_bfloat16(bfloat16)
    try:
        net = model()
        compiled = cstorch.compile(net, backend="wse_ws")
        compiled.eval()

        @cstorch.compile_step
        def evaluation_step(x):
            return compiled(x)

        with torch.no_grad():
            for x, _ in batches(3):
                logits = evaluation_step(x)
                with torch.autocast("cpu", dtype=half):  # plain PyTorch with the same numerics
                    expected = net(x)
                assert logits.dtype == half and torch.equal(logits, expected)
        program = process_backend.current().run.program
        assert {dtype for op, _, dtypes in _program_ops(program, (batches(1)[0][0],))
                if op is torch.ops.aten.addmm.default for dtype in dtypes} == {half}
        assert all(p.dtype == torch.float32 for p in net.parameters())
    finally:
        process_backend.reset()  # the run's end (a new process): the precision may change again
        amp.use_bfloat16(False)


def test_a_steps_own_autocast_is_the_same_program(ws_csd, tmp_path):
    """The document's examples may still say `with cstorch.amp.autocast():`: harmless, the same
    program (same checksum) and the same numbers."""
    results, checksums = [], []
    for own in (False, True):
        process_backend.reset()  # one run per process: a new "process" for each
        configure(ws_csd, tmp_path / str(own))
        t = Trainer(model())

        def body(x, y, t=t, own=own):
            if not own:
                return t.body(x, y)
            with cstorch.amp.autocast():
                return t.body(x, y)

        step = cstorch.compile_step(body)
        results.append([step(x, y) for x, y in batches(4)] + [p.detach().clone() for p in t.net.parameters()])
        checksums.append(process_backend.current().run.program.checksum)
    assert checksums[0] == checksums[1]
    assert all(torch.equal(a, b) for a, b in zip(*results))


def test_the_eager_baseline_helper_is_the_runtimes_precision():
    """The tests' eager baselines (helpers.as_the_system) use what the runtime uses by default."""
    with as_the_system(), torch.no_grad():
        assert torch.get_autocast_dtype("cpu") == amp.half_dtype() == torch.float16
        assert torch.is_autocast_enabled("cpu")
