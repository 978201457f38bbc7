"""Where the real cerebras.pytorch 2.10 behaves in a way scripts rely on, this runtime does the
same (issue 37; docs/cstorch.md, "Compatibility with the real package"): steps are executed
steps, the CPU backend warns and refuses as the real one, an optimizer needs a backend, refusals
are the builtin exception types the real package raises, and a CSX step takes integer class
targets of any width. Against a real csd (CSX) and on the CPU backend."""

import warnings

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch import v2
from tests.cstorch.helpers import Trainer, configure, model, run_record

BATCH = 32


def _input(n: int = 6, batch_size: int = BATCH):
    return v2.input_fn(n, batch_size)


def _uneven_input():
    """40 samples in batches of 16: 16, 16, then 8 (drop_last=False)."""
    x = torch.randn(40, 8, generator=torch.Generator().manual_seed(2))
    data = torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())
    return torch.utils.data.DataLoader(data, batch_size=16, drop_last=False)


def _cpu(tmp_path):
    return cstorch.backend("CPU", artifact_dir=str(tmp_path / "cpu"))


# -- 1. steps are executed steps ------------------------------------------------------------------


def test_r18_a_batch_inspected_before_the_loop_is_not_a_step(ws_csd, tmp_path):
    """R1.8 scripts look at a batch before their loop: the loop still runs every step, the last
    checkpoint happens, and csd counts steps × batch samples."""
    configure(ws_csd, tmp_path, checkpoint_steps=5)
    t = Trainer(model())
    dataloader = cstorch.utils.data.DataLoader(_input, num_steps=10)
    inspected = next(iter(dataloader))
    assert inspected[0].shape == (BATCH, 8)
    steps, saved = 0, []
    for batch in dataloader:
        t.step(*batch)
        steps += 1
        if steps % 5 == 0:
            cstorch.save({"model": t.net.state_dict()}, str(tmp_path / f"checkpoint_{steps}.mdl"))
            saved.append(steps)
    assert (steps, saved) == (10, [5, 10])
    run = process_backend.current().run
    assert run.finished and run.step == run.last_step == 10
    record = run_record(ws_csd)
    assert record["totalSamples"] == 10 * BATCH and record["status"] == "CLOSED"


def test_r18_a_loop_left_early_leaves_the_rest_of_the_schedule_to_the_next_loop(ws_csd, tmp_path):
    """Steps executed count, batches drawn do not: a loop left after 4 steps is followed by one
    that runs the 6 left (an epoch iterated to its end without steps counts as fed)."""
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    dataloader = cstorch.utils.data.DataLoader(_input, num_steps=10)
    for steps, batch in enumerate(dataloader, start=1):
        t.step(*batch)
        if steps == 4:
            break
    rest = sum(1 for batch in dataloader if t.step(*batch) is not None)
    assert rest == 6 and process_backend.current().run.finished
    assert run_record(ws_csd)["totalSamples"] == 10 * BATCH


def test_r18_with_input_workers_the_inspected_batch_is_the_loops_first(ws_csd, tmp_path):
    """Input workers' stream continues (it does not restart per iteration), and each batch they
    hand over is streamed into the run: the batch inspected before the loop is the loop's first,
    so the run sees, and csd counts, exactly the batches of 10 steps."""
    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    t = Trainer(model())
    dataloader = cstorch.utils.data.DataLoader(_input, num_steps=10)
    inspected = next(iter(dataloader))
    seen = []
    for batch in dataloader:
        seen.append(batch[0])
        t.step(*batch)
    assert len(seen) == 10 and seen[0] is inspected[0]
    assert process_backend.current().run.finished
    assert run_record(ws_csd)["totalSamples"] == 10 * BATCH


@pytest.mark.parametrize("kind", ["CSX", "CPU"])
def test_v2_a_batch_inspected_before_the_executor_is_not_a_step(ws_csd, tmp_path, kind):
    """2.x: `next(iter(dataloader))` outside the DataExecutor is one batch of the input, fed to
    no run: the executor runs its 10 steps from the input's start, checkpoints on its steps."""
    backend = v2.csx(ws_csd, tmp_path) if kind == "CSX" else _cpu(tmp_path)
    t = v2.Trainer(backend, model)
    dataloader = cstorch.utils.data.DataLoader(_input)
    inspected = next(iter(dataloader))
    saved, firsts = [], []

    @cstorch.checkpoint_closure
    def save(step):
        cstorch.save({"model": t.net.state_dict()}, str(tmp_path / f"c{step}.mdl"))
        saved.append(step)

    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=10, checkpoint_steps=5)
    for step, batch in enumerate(executor, start=1):
        firsts.append(batch[0])
        t.step(batch)
        save(step)
    assert (len(firsts), saved) == (10, [5, 10])
    assert torch.equal(firsts[0], inspected[0])  # the run's input starts at its beginning
    if kind == "CSX":
        assert run_record(ws_csd)["totalSamples"] == 10 * BATCH


# -- 2. the CPU backend warns and refuses as the real one -------------------------------------------

NON_UNIFORM = (r"Detected non-uniform batch sizes between batches \(16 vs 8\)\. While this is allowed in non-CSX "
               r"runs, it may throw off metrics such as rate profiling\. $")


def test_cpu_warns_of_a_batch_of_another_size_in_the_real_words(tmp_path):
    backend = _cpu(tmp_path)
    t = v2.Trainer(backend, model)
    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(_uneven_input), num_steps=3)
    with pytest.warns(UserWarning, match=NON_UNIFORM):
        losses = [t.step(batch) for batch in executor]
    assert len(losses) == 3
    with pytest.warns(UserWarning, match=r"within the same batch: \{3, 4\}\. While this is allowed in non-CSX runs"):
        next(iter(cstorch.utils.data.DataLoader(lambda: [(torch.zeros(4, 8), torch.zeros(3))])))


def test_csx_still_refuses_a_batch_of_another_size(ws_csd, tmp_path):
    t = v2.Trainer(v2.csx(ws_csd, tmp_path), model)
    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(_uneven_input), num_steps=3)
    with pytest.raises(errors.ReprogramForbidden, match="Inconsistent batch sizes detected: batch 3 has size 8"):
        for batch in executor:
            t.step(batch)


CPU_HALF = ("Mixed precision on CPU is only supported with bfloat16. Please call "
            "cstorch.amp.set_half_dtype(torch.bfloat16) or pass the dtype to cstorch.amp.autocast(dtype=torch.bfloat16)")


def test_cpu_mixed_precision_is_bfloat16_only_as_the_real_autocast_says(tmp_path):
    _cpu(tmp_path)
    layer = torch.nn.Linear(4, 2)
    with pytest.raises(ValueError) as exc:  # the default half dtype, float16
        with cstorch.amp.autocast():
            pass
    assert isinstance(exc.value, errors.InvalidArgument) and str(exc.value) == CPU_HALF
    with pytest.raises(errors.InvalidArgument):
        with cstorch.amp.autocast(dtype=torch.float16):
            pass
    with cstorch.amp.autocast(dtype=torch.bfloat16):
        assert layer(torch.randn(3, 4)).dtype == torch.bfloat16
    cstorch.amp.set_half_dtype(torch.bfloat16)
    with cstorch.amp.autocast():
        assert layer(torch.randn(3, 4)).dtype == torch.bfloat16
    assert layer(torch.randn(3, 4)).dtype == torch.float32  # no autocast of its own on CPU


def test_cpu_backend_refuses_mixed_precision_as_an_argument(tmp_path):
    with pytest.raises(ValueError) as exc:
        cstorch.backend("CPU", artifact_dir=str(tmp_path), mixed_precision=True)
    assert str(exc.value) == ("Passing mixed_precision to the CPU backend is no longer allowed. Please use the "
                              "cstorch.amp.autocast() context manager instead.")


def test_csx_autocast_changes_nothing_and_refuses_nothing(ws_csd, tmp_path):
    with pytest.raises(RuntimeError, match="No active Cerebras backend found"):
        with cstorch.amp.autocast():  # before any backend, as the real one
            pass
    v2.csx(ws_csd, tmp_path)
    with cstorch.amp.autocast():  # the capture's own context: float16 on the system
        assert torch.nn.Linear(4, 2)(torch.randn(3, 4)).dtype == torch.float16


# -- 3. an optimizer needs a backend ------------------------------------------------------------------


def test_an_optimizer_before_any_backend_is_refused_and_r18s_order_builds_it(ws_csd, tmp_path):
    net = model()
    with pytest.raises(RuntimeError, match="No active Cerebras backend found"):
        cstorch.optim.Adam(net.parameters())
    _cpu(tmp_path)  # nothing was made: the backend may still be created
    assert isinstance(cstorch.optim.Adam(net.parameters()), cstorch.optim.Optimizer)
    process_backend.reset()
    configure(ws_csd, tmp_path / "r18")  # R1.8: configure, compile, then the optimizer
    cstorch.compile(net, backend="WSE_WS")
    assert cstorch.optim.SGD(net.parameters(), lr=0.1).param_groups[0]["lr"] == 0.1


# -- 4. the builtin exception types ------------------------------------------------------------------


def test_refusals_are_the_builtin_types_the_real_package_raises(ws_csd, tmp_path):
    with pytest.raises(RuntimeError, match="No active Cerebras backend found"):
        cstorch.backend()
    with pytest.raises(ValueError, match="Invalid Cerebras PyTorch backend type specified"):
        cstorch.backend("TPU")
    loader = cstorch.utils.data.DataLoader(_input)
    with pytest.raises(ValueError, match="Only one of `num_epochs` or `num_steps` can be specified"):
        cstorch.utils.data.compute_num_steps(loader, num_steps=2, num_epochs=1)
    with pytest.raises(RuntimeError, match="Initial global step 5 already exceeds max step 5"):
        cstorch.utils.data.compute_num_steps(loader, initial_step=5, max_steps=5)
    for kind in ("CPU", "CSX"):
        process_backend.reset()
        backend = _cpu(tmp_path) if kind == "CPU" else v2.csx(ws_csd, tmp_path / kind)
        with pytest.raises(RuntimeError, match="Cannot instantiate multiple backends"):
            cstorch.backend("CPU")
        t = v2.Trainer(backend, model)
        with pytest.raises(RuntimeError, match="Detected that a data executor was not used"):
            t.step(next(iter(cstorch.utils.data.DataLoader(_input))))
    with pytest.raises(RuntimeError, match="Only uniform batch sizes are supported in CS runs"):
        cstorch.utils.data.infer_batch_size(torch.zeros(4), batch_size=8)
    with pytest.raises(TypeError, match="Detected that dataloader was not wrapped") as exc:
        cstorch.utils.data.DataExecutor(_input(), num_steps=2)
    assert exc.value.code == "INVALID_ARGUMENT"


def test_the_coded_errors_keep_their_codes_and_exit_codes():
    """cs and csd read the code and the exit code, never the builtin base."""
    for cls, builtin, code, exit_code in ((errors.InvalidArgument, ValueError, "INVALID_ARGUMENT", errors.EXIT_USAGE),
                                          (errors.InvalidState, RuntimeError, "INVALID_STATE", errors.EXIT_STATE),
                                          (errors.ReprogramForbidden, RuntimeError, "REPROGRAM_FORBIDDEN",
                                           errors.EXIT_STATE)):
        exc = errors.from_wire({"code": code, "message": "m", "hint": "h"})
        assert type(exc) is cls and isinstance(exc, builtin) and isinstance(exc, errors.CsError)
        assert (exc.code, exc.exit_code, str(exc)) == (code, exit_code, "m h")
    assert errors.BY_CODE["INVALID_ARGUMENT"] is errors.InvalidArgument


# -- 5. integer class targets of any width on CSX ----------------------------------------------------


def _class_losses(targets_dtype, seed: int = 0):
    """The losses of 3 steps of a compile_step over cross_entropy (with label smoothing), nll_loss
    and multi_margin_loss with targets of `targets_dtype`, and the final weights."""
    net = model(seed)
    t = Trainer(net)

    @cstorch.compile_step
    def step(x, y):
        t.optimizer.zero_grad()
        logits = t.compiled(x)
        loss = (torch.nn.functional.cross_entropy(logits, y, label_smoothing=0.1)
                + torch.nn.functional.nll_loss(logits.log_softmax(-1), y)
                + torch.nn.functional.multi_margin_loss(logits, y))
        loss.backward()
        t.optimizer.step()
        return loss

    data = v2.input_fn(3, BATCH)
    losses = [step(x, y.to(targets_dtype)) for x, y in data]
    return losses, [p.detach().clone() for p in net.parameters()]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_a_csx_step_takes_class_targets_of_any_integer_dtype(ws_csd, tmp_path, dtype):
    results = []
    for targets in (torch.int64, dtype):
        process_backend.reset()  # one run per process: a new "process" for each
        configure(ws_csd, tmp_path / str(targets))
        results.append(_class_losses(targets))
    (wide, wide_weights), (narrow, narrow_weights) = results
    assert all(torch.equal(a, b) for a, b in zip(wide, narrow))
    assert all(torch.equal(a, b) for a, b in zip(wide_weights, narrow_weights))


def test_the_cpu_backend_keeps_torchs_int64_rule_as_the_real_one(tmp_path):
    _cpu(tmp_path)
    logits = torch.randn(4, 2)
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte, but got Int"):
        torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 1, 0], dtype=torch.int32))


def test_no_warning_for_uniform_batches_on_cpu(tmp_path):
    _cpu(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(list(cstorch.utils.data.DataLoader(_input))) == 6
