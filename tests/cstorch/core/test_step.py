"""compile_step against a real csd: the first call captures the whole step and programs the
fabric once; later calls replay it (the same numbers as eager PyTorch); the static-graph rules
refuse what would need another program, and reading a tensor inside the step points at
step_closure."""

import json
import os
import time

import numpy  # noqa: F401  (Tensor.numpy needs it importable)
import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import csd_link, process_backend
from tests.cstorch.helpers import Trainer, as_the_system, batches, configure, eagerly, files, model, run_record

READ_RULE = "it is not allowed to read a tensor's contents outside of a step closure"


def test_the_replayed_step_trains_exactly_as_eager_pytorch(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    reference = model()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for x, y in batches(30):
        losses.append(t.step(x, y))
        with as_the_system():  # the step's numerics: float16 compute, float32 weights
            ref_opt.zero_grad()
            torch.nn.functional.cross_entropy(reference(x), y).backward()
            ref_opt.step()
    for ours, theirs in zip(t.net.parameters(), reference.parameters()):
        assert torch.equal(ours, theirs)
        assert torch.equal(ours.grad, theirs.grad)  # the step's gradients are left on the parameters
    assert losses[-1] < losses[0] / 3  # it learns
    assert process_backend.current().run.step == 30


def test_one_run_programmed_once_with_every_sample_and_performance_json(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    for x, y in batches(25):
        t.step(x, y)
    rt = process_backend.current().run
    # At most one run.stream per STREAM_EVERY_STEPS steps (how many depends on how fast the steps
    # ran: each waits STREAM_EVERY_SECONDS too), and what is left goes at the close, in one more.
    during = rt.csd.round_trips
    assert during <= 25 // csd_link.STREAM_EVERY_STEPS
    left = rt.csd._steps  # none if steps so slow (a loaded machine) that the last one streamed
    rt.finish()
    assert rt.csd.round_trips == during + (1 if left else 0)
    record = run_record(ws_csd)
    assert (record["status"], record["mode"], record["totalSamples"]) == ("CLOSED", "train", 25 * 32)
    with open(tmp_path / "model" / "performance" / "performance.json") as f:
        perf = json.load(f)
    assert sorted(perf) == ["compile_time", "est_samples_per_sec", "programming_time", "samples_per_sec",
                            "suspected_input_bottleneck", "total_samples", "total_time"]
    assert perf["total_samples"] == 800 and perf["compile_time"] > 0 and perf["est_samples_per_sec"] > 0
    assert perf["compile_time"] == round(rt.program.compile_time, 6)
    with ws_csd.client() as c:
        events = [e for e in c.events_show(max_count=1000) if e["details"].get("runId") == record["runId"]]
    assert [e["type"] for e in events].count("EventProgrammingStarted") == 1
    shown = ws_csd.cs("runs", "show", record["runId"])
    assert shown.returncode == 0 and "800" in shown.stdout, shown.stdout
    (artifacts,) = files(tmp_path / "compile")
    assert artifacts == f"cs_{rt.program.checksum[:16]}"
    assert files(tmp_path / "compile" / artifacts) == ["compile.log", "graph.txt", "program.json", "program.py"]
    assert "aten.addmm" in (tmp_path / "compile" / artifacts / "program.py").read_text()


def test_python_in_the_step_runs_once_so_an_int_counter_keeps_its_first_value(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(model(), backend="wse_ws")
    calls = {"n": 0}

    @cstorch.compile_step
    def step(x):
        calls["n"] += 1
        return compiled(x).sum() * calls["n"]

    (x, _), = batches(1)
    first = step(x)
    assert [torch.equal(step(x), first) for _ in range(3)] == [True] * 3
    assert calls["n"] == 1


@pytest.mark.parametrize("read, named", [
    (lambda t: t.item(), "Tensor.item()"),
    (lambda t: bool(t > 0), "bool(tensor) (`if tensor:`, `while tensor:`)"),
    (lambda t: 1 if t > 0 else 0, "bool(tensor) (`if tensor:`, `while tensor:`)"),
    (lambda t: print(t), "printing a tensor (repr)"),
    (lambda t: f"{t}", "formatting a tensor (f-string, print)"),
    (lambda t: t.tolist(), "Tensor.tolist()"),
    (lambda t: t.detach().numpy(), "Tensor.numpy()"),
    (lambda t: float(t), "float(tensor)"),
])
def test_reading_a_tensor_inside_the_step_names_the_operation_and_points_at_step_closure(
        ws_csd, tmp_path, read, named):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(model(), backend="wse_ws")

    @cstorch.compile_step
    def step(x):
        loss = compiled(x).sum()
        read(loss)
        return loss

    (x, _), = batches(1)
    with pytest.raises(errors.InvalidState) as exc:
        step(x)
    assert exc.value.message.startswith(f"{named} inside the compile_step function 'step' (at test_step.py:")
    assert exc.value.message.endswith(f": {READ_RULE}.")
    assert "@cstorch.step_closure" in exc.value.hint
    assert ws_csd.client().runs_list()["runHolder"] is None  # nothing was opened


def test_a_failed_capture_leaves_the_state_as_it_was(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    before = [p.detach().clone() for p in t.net.parameters()]

    @cstorch.compile_step
    def step(x, y):
        t.body(x, y).item()

    with pytest.raises(errors.InvalidState):
        step(*batches(1)[0])
    assert all(torch.equal(a, b) for a, b in zip(before, t.net.parameters()))


def test_another_batch_size_is_refused_as_reprogramming(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    x, y = batches(1)[0]
    t.step(x, y)
    with pytest.raises(errors.ReprogramForbidden) as exc:
        t.step(x[:17], y[:17])
    assert "batch size 32 → 17: batch with drop_last=True (tensor 0: shape (32, 8) → (17, 8))" in exc.value.message
    assert exc.value.message.endswith("The fabric is programmed once per run and cannot be reprogrammed.")
    with pytest.raises(errors.ReprogramForbidden, match=r"tensor 0: dtype float32 → float64"):
        t.step(x.double(), y)
    assert process_backend.current().run.step == 1


def test_another_model_or_a_second_step_function_is_refused_as_reprogramming(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    first, second = cstorch.compile(model(0), backend="wse_ws"), cstorch.compile(model(1), backend="wse_ws")

    @cstorch.compile_step
    def step(net, x):
        return net(x).sum()

    @cstorch.compile_step
    def other_step(x):
        return second(x).sum()

    (x, _), = batches(1)
    step(first, x)
    with pytest.raises(errors.ReprogramForbidden, match=r"argument leaf 0: <compiled Sequential model at 0x[0-9a-f]+, backend='wse_ws'> → <compiled Sequential model at "):
        step(second, x)
    with pytest.raises(errors.ReprogramForbidden) as exc:
        other_step(x)
    assert exc.value.message == (
        "The compile_step function 'other_step' would be a second program in this run, which runs 'step': "
        "the fabric is programmed once per run and cannot be reprogrammed.")


def test_a_core_torch_optimizer_inside_the_step_is_refused(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(net := model(), backend="wse_ws")
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

    @cstorch.compile_step
    def step(x):
        loss = compiled(x).sum()
        loss.backward()
        optimizer.step()
        return loss

    with pytest.raises(errors.InvalidState) as exc:
        step(batches(1)[0][0])
    assert "torch.optim.sgd.SGD was stepped inside a compiled step" in exc.value.message
    assert "fundamentally incompatible with traced lazy execution" in exc.value.message


def test_a_closure_called_in_the_step_runs_after_every_step_with_the_last_value(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(model(), backend="wse_ws")
    seen = []

    @cstorch.step_closure
    def record(t):
        seen.append(t.tolist())

    @cstorch.compile_step
    def step(x):
        out = compiled(x).sum(0)
        record(out)
        out.mul_(0)  # the closure sees the value last set, not the one at the call
        out.add_(x.shape[0])
        return out

    for x, _ in batches(3):
        step(x)
    assert seen == [[32.0, 32.0]] * 3


def test_a_closure_outside_the_step_sees_materialized_values(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    losses = []

    @cstorch.step_closure
    def post(loss):
        losses.append(loss.item())

    for x, y in batches(4):
        post(t.step(x, y))
    assert len(losses) == 4 and losses[0] > losses[-1]


def test_weights_are_fetched_only_on_checkpoint_steps_and_the_last(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, checkpoint_steps=3)
    t = Trainer(model())
    t.net.state_dict()  # before the first step: allowed
    process_backend.current().run.last_step = 5
    data = batches(5)
    t.step(*data[0])
    with pytest.raises(errors.InvalidState) as exc:
        t.net.state_dict()
    assert exc.value.message == (
        "Cannot fetch the model's weights after step 1: It is only possible to fetch weights on predetermined "
        "checkpoint steps configured in cstorch.configure (checkpoint_steps=3).")
    with pytest.raises(errors.InvalidState, match="Cannot fetch the optimizer's weights after step 1"):
        t.optimizer.state_dict()
    t.step(*data[1])
    t.step(*data[2])
    assert set(t.net.state_dict()) == {"0.weight", "0.bias", "2.weight", "2.bias"}
    t.optimizer.state_dict()
    t.step(*data[3])
    with pytest.raises(errors.InvalidState):
        t.net[0].state_dict()  # a submodule too
    t.step(*data[4])
    t.net.state_dict()  # the last step
    assert run_record(ws_csd)["status"] == "CLOSED"  # the last step ended the run
    with pytest.raises(errors.InvalidState) as exc:  # one run per process
        t.step(*data[0])
    assert exc.value.message == "This process's run has ended (after step 5): one run per process."
    with pytest.raises(errors.InvalidState, match="run has ended: one run per process"):
        cstorch.compile(model(), backend="wse_ws")


def test_a_run_is_train_or_eval_never_both(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    t.step(*batches(1)[0])
    with pytest.raises(errors.IncompatibleProgram) as exc:
        t.compiled.eval()
    assert exc.value.message == (
        "compiled_model.eval() after this run's program was compiled for train: a run is train or eval, never "
        "both: mode train_and_eval is not supported because the fabric cannot be reprogrammed for eval after "
        "having been programmed for train in the same run.")
    t.compiled.train()  # the run's own mode stays allowed
    assert t.compiled.training
    t.net.eval()  # on the module itself: the next step refuses
    with pytest.raises(errors.IncompatibleProgram, match=r"^Sequential.eval\(\) after this run's program was "
                                                         r"compiled for train: a run is train or eval, never both"):
        t.step(*batches(1)[0])


def test_an_eval_run_is_opened_in_eval_mode(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    compiled = cstorch.compile(net := model(), backend="wse_ws")
    compiled.eval()

    @cstorch.compile_step
    def step(x):
        return compiled(x).argmax(-1)

    with torch.no_grad():
        for x, _ in batches(3):
            with as_the_system():
                expected = net(x).argmax(-1)
            assert torch.equal(step(x), expected)
    assert run_record(ws_csd)["mode"] == "eval"
    with pytest.raises(errors.IncompatibleProgram, match="compiled_model.train\\(\\) after this run's program"):
        compiled.train()


def test_an_eval_script_that_never_calls_eval_opens_an_eval_run(ws_csd, tmp_path):
    """The seed's evaluation loop under torch.no_grad(), without compiled_model.eval(): the step
    has no backward and no update, so the program, csd's run and the yaml say eval. The module
    stays as the script left it, so the numbers are eager PyTorch's for that module."""
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    accuracy = cstorch.metrics.AccuracyMetric("accuracy")

    @cstorch.compile_step
    def evaluation_step(x, y):
        out = compiled(x)
        accuracy(labels=y, predictions=out.argmax(-1))
        return torch.nn.functional.cross_entropy(out, y)

    data = batches(4)
    with torch.no_grad():
        for step, (x, y) in enumerate(cstorch.utils.data.DataLoader(lambda: data), 1):
            evaluation_step(x, y)
            if step == 3:  # the module is not switched behind the script's back, nor may the script switch it
                assert net.training and process_backend.current().run.mode == "eval"
                with pytest.raises(errors.ReprogramForbidden, match=r"^compiled_model.eval\(\) after the first "
                                                                    r"step: the program was captured with the "
                                                                    r"module in training mode"):
                    compiled.eval()
                net.eval()  # on the module itself: the next step refuses, the same way
                with pytest.raises(errors.ReprogramForbidden, match=r"^Sequential.eval\(\) after the first step"):
                    evaluation_step(x, y)
                net.train()
    record = run_record(ws_csd)
    assert (record["mode"], record["program"]["mode"], record["totalSamples"]) == ("eval", "eval", 128)
    assert os.path.isfile(tmp_path / "model" / "eval" / "params_eval.yaml")
    with as_the_system():
        correct = sum((net(x).argmax(-1) == y).sum().item() for x, y in data)
    assert float(accuracy) == correct / 128


def test_a_step_with_no_backward_is_eval_even_with_gradients_enabled(ws_csd, tmp_path, capsys):
    """R1.8's eval runner: no .eval(), no torch.no_grad(), a step returning the model's loss. The
    compile_only summary says the mode too."""
    configure(ws_csd, tmp_path, compile_only=True)
    compiled = cstorch.compile(model(), backend="wse_ws")

    @cstorch.compile_step
    def eval_step(x, y):
        return torch.nn.functional.cross_entropy(compiled(x), y)

    eval_step(*batches(1)[0])
    assert "(WEIGHT_STREAMING, mode eval)" in capsys.readouterr().out
    assert os.path.isfile(tmp_path / "model" / "eval" / "params_eval.yaml")


def test_an_explicit_mode_that_contradicts_the_step_is_refused_before_anything_opens(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    runs_before = len(ws_csd.client().runs_list()["runs"])
    t = Trainer(model())
    t.compiled.eval()  # but the step trains
    before = [p.detach().clone() for p in t.net.parameters()]
    with pytest.raises(errors.IncompatibleProgram) as exc:
        t.step(*batches(1)[0])
    assert exc.value.message == (
        "compiled_model.eval() was called, but the step 'body' computes gradients or updates parameters (a "
        "training program): a run is train or eval, never both: mode train_and_eval is not supported because the "
        "fabric cannot be reprogrammed for eval after having been programmed for train in the same run.")
    assert "torch.no_grad()" in exc.value.hint
    assert all(torch.equal(a, b) for a, b in zip(before, t.net.parameters()))
    assert len(ws_csd.client().runs_list()["runs"]) == runs_before

    compiled = cstorch.compile(model(), backend="wse_ws")
    t.compiled.train()
    compiled.train()

    @cstorch.compile_step
    def forward_only(x):
        return t.compiled(x).sum() + compiled(x).sum()

    with pytest.raises(errors.IncompatibleProgram, match=r"^compiled_model.train\(\) was called, but the step "
                                                         r"'forward_only' computes no gradient and updates no "
                                                         r"parameter \(an evaluation program\)"):
        forward_only(batches(1)[0][0])
    compiled.eval()
    with pytest.raises(errors.InvalidState, match="compiled_model.train\\(\\) was called on one and .eval\\(\\) on"):
        forward_only(batches(1)[0][0])
    assert len(ws_csd.client().runs_list()["runs"]) == runs_before


def _fabric_events(daemon) -> list:
    with daemon.client() as c:
        return [e for e in c.events_show() if e["type"].startswith(("EventProgramming", "EventTraining"))]


def test_compile_only_writes_the_artifacts_and_opens_no_run(ws_csd, tmp_path, capsys):
    configure(ws_csd, tmp_path, compile_only=True)
    runs_before = len(ws_csd.client().runs_list()["runs"])
    events_before = _fabric_events(ws_csd)
    t = Trainer(model())
    before = [p.detach().clone() for p in t.net.parameters()]
    for x, y in batches(3):
        t.step(x, y)
    assert len(ws_csd.client().runs_list()["runs"]) == runs_before
    assert _fabric_events(ws_csd) == events_before  # csd never programmed, nothing trained
    assert all(torch.equal(a, b) for a, b in zip(before, t.net.parameters()))  # nothing executed
    (artifacts,) = files(tmp_path / "compile")
    assert "compile_time" in (tmp_path / "compile" / artifacts / "compile.log").read_text()
    out = capsys.readouterr().out
    assert "cstorch compile_only: step 'body' is valid for" in out
    assert f"checksum {artifacts[3:]}" in out and "The fabric was not programmed; nothing executed." in out


def test_validate_only_checks_the_system_and_writes_nothing(ws_csd, tmp_path, capsys):
    configure(ws_csd, tmp_path, validate_only=True)
    runs_before = len(ws_csd.client().runs_list()["runs"])
    events_before = _fabric_events(ws_csd)
    t = Trainer(model())
    t.step(*batches(1)[0])
    assert not os.path.exists(tmp_path / "compile")
    with pytest.raises(errors.ReprogramForbidden, match="batch size 32 → 16"):
        t.step(*batches(1, batch_size=16)[0])
    assert len(ws_csd.client().runs_list()["runs"]) == runs_before
    assert _fabric_events(ws_csd) == events_before
    assert "cstorch validate_only: step 'body' is valid for" in capsys.readouterr().out


def test_validate_only_refuses_a_system_in_the_other_mode(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, validate_only=True)
    with pytest.raises(errors.IncompatibleProgram, match="backend='wse_pl' compiles for PIPELINED"):
        cstorch.compile(model(), backend="wse_pl")


def test_validate_only_needs_the_system(tmp_path):
    cstorch.configure(model_dir=str(tmp_path), compile_dir=str(tmp_path / "c"), validate_only=True,
                      mgmt_address=f"ipc://{tmp_path}/nobody.sock")
    with pytest.raises(errors.Unreachable):
        cstorch.compile(model(), backend="wse_ws")


def test_streaming_batches_csd_round_trips(ws_csd, tmp_path, monkeypatch):
    """At most one run.stream per ten steps, and per second; csd's count follows."""
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    data = batches(5)
    t.step(*data[0])  # programs the run
    programmed = time.monotonic()
    for i in range(1, 100):
        t.step(*data[i % 5])
    s = process_backend.current().csd
    start = programmed - 0.001  # (not s._last_stream: on a loaded machine a stream may already have moved it)
    assert s.round_trips <= min(10, int((time.monotonic() - start) / csd_link.STREAM_EVERY_SECONDS) + 1)
    monkeypatch.setattr(csd_link, "STREAM_EVERY_SECONDS", 0.0)  # now only the ten-step bound holds
    for i in range(30):
        t.step(*data[i % 5])
    assert run_record(ws_csd)["totalSamples"] >= 120 * 32


def _full_step(net, compiled, optimizer, scheduler, scaler):
    def step(x, y):
        with cstorch.amp.autocast():
            loss = torch.nn.functional.cross_entropy(compiled(x), y)
        cstorch.amp.optimizer_step(loss, optimizer, scaler, max_gradient_norm=1.0)
        scheduler.step()
        return loss
    return step


def _library(seed):
    net = model(seed)
    optimizer = cstorch.optim.configure_optimizer(optimizer_type="AdamW", params=net.parameters(), lr=0.01)
    scheduler = cstorch.optim.configure_lr_scheduler(
        optimizer, learning_rate=[{"scheduler": "LinearLR", "initial_learning_rate": 0.0, "end_learning_rate": 0.01,
                                   "total_iters": 5},
                                  {"scheduler": "CosineDecayLR", "initial_learning_rate": 0.01,
                                   "end_learning_rate": 0.001, "total_iters": 20}])
    scaler = cstorch.amp.GradScaler(loss_scale="dynamic", init_scale=2.0**15, steps_per_increase=4,
                                    min_loss_scale=1.0, max_loss_scale=2.0**20)
    return net, optimizer, scheduler, scaler


def test_the_documents_full_step_replays_exactly_as_its_eager_run(ws_csd, tmp_path):
    """AdamW, a SequentialLR schedule, dynamic loss scaling with clipping, the step's own autocast
    inside the runtime's (harmless), against the same step run eagerly under autocast: the
    library's tensors updated in place are persistent state the replay keeps updating."""
    configure(ws_csd, tmp_path)
    net, optimizer, scheduler, scaler = _library(0)
    compiled = cstorch.compile(net, backend="wse_ws")
    step = cstorch.compile_step(_full_step(net, compiled, optimizer, scheduler, scaler))
    eager_net, *eager_rest = _library(0)
    eager = eagerly(_full_step(eager_net, eager_net, *eager_rest))
    for x, y in batches(12):
        assert torch.equal(step(x, y), eager(x, y))
    for ours, theirs in zip(net.parameters(), eager_net.parameters()):
        assert torch.equal(ours, theirs)
    assert torch.equal(scaler.get_scale(), eager_rest[2].get_scale())
    assert torch.equal(optimizer.param_groups[0]["lr"], eager_rest[0].param_groups[0]["lr"])


def test_random_ops_draw_as_eager_pytorch_does(ws_csd, tmp_path):
    """Dropout in the step: the replay draws from torch's generator as the eager step would (the
    capture and the estimate put the generator back)."""
    configure(ws_csd, tmp_path)

    def dropout_model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Dropout(0.5), torch.nn.Linear(32, 2))

    t = Trainer(dropout_model())
    reference = dropout_model()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    data = batches(6)
    torch.manual_seed(7)
    ours = [t.step(x, y) for x, y in data]
    torch.manual_seed(7)
    theirs = []
    for x, y in data:
        with as_the_system():
            ref_opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(reference(x), y)
            loss.backward()
            ref_opt.step()
        theirs.append(loss.detach())
    assert all(torch.equal(a, b) for a, b in zip(ours, theirs))
    assert all(torch.equal(a, b) for a, b in zip(t.net.parameters(), reference.parameters()))


def test_aliases_made_outside_the_dispatcher_replay_as_the_tensors_they_view(ws_csd, tmp_path):
    """`p.data` is a new tensor object each time, made without an op: the capture takes it for
    the parameter it views (same storage), so in-place updates through it replay."""
    configure(ws_csd, tmp_path)
    net, reference = model(), model()
    compiled = cstorch.compile(net, backend="wse_ws")

    def body(m, x):
        loss = m(x).square().mean()
        loss.backward()
        for p in m.parameters():
            p.data.sub_(0.1 * p.grad)
            p.data[0].mul_(0.5)  # a view of the alias
            p.grad = None
        return loss

    step = cstorch.compile_step(lambda x: body(compiled, x))
    for x, _ in batches(4):
        assert torch.equal(step(x), eagerly(body)(reference, x))
    assert all(torch.equal(a, b) for a, b in zip(net.parameters(), reference.parameters()))


def test_a_method_may_be_the_step(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)

    class Loop:
        def __init__(self):
            self.compiled = cstorch.compile(model(), backend="wse_ws")

        @cstorch.compile_step
        def step(self, x):
            return self.compiled(x).sum()

    loop = Loop()
    (x, _), = batches(1)
    assert torch.equal(loop.step(x), loop.step(x))
    with pytest.raises(errors.ReprogramForbidden, match="argument leaf 0"):
        Loop.step(Loop.__new__(Loop), x)  # another instance: another program


def test_a_step_that_only_clears_gradients_is_still_eval(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)
    for p in net.parameters():
        p.grad = torch.ones_like(p)  # left over from something eager before the run

    @cstorch.compile_step
    def eval_step(x):
        optimizer.zero_grad()  # clears them: no gradient computed, nothing updated
        return compiled(x).sum()

    with torch.no_grad():
        eval_step(batches(1)[0][0])
    assert run_record(ws_csd)["mode"] == "eval"
