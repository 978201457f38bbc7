"""The later releases' DataExecutor against a real csd: each DataExecutor is one run (several per
process, in turn: train, then validate with a new program), its own directory under
artifact_dir/executors/, and the rules a run keeps — one at a time, a cstorch DataLoader,
num_steps from len(dataloader), checkpoint closures on checkpoint steps, step closures on
activation steps, weights only on checkpoint steps, compile_only/validate_only one step."""

import json
import math
import os
import warnings

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import model
from tests.cstorch.v2 import Trainer, csx, input_fn


def _runs(daemon) -> list:
    with daemon.client() as c:
        return c.runs_list()["runs"]


def _programmed(daemon, run_id: str) -> int:
    with daemon.client() as c:
        return sum(1 for e in c.events_show() if e["type"] == "EventProgrammingStarted"
                   and e.get("details", {}).get("runId") == run_id)


def test_train_then_validate_in_one_process_is_two_runs_each_programmed_once(ws_csd, tmp_path):
    """Relaxed: several DataExecutors per process, in turn; the validation executor's trace
    captures the eval step as a new program."""
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    before = len(_runs(ws_csd))
    losses = []

    @cstorch.step_closure
    def record(loss):
        losses.append(loss.item())

    train = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=12)
    for batch in train:
        record(t.step(batch))
    assert len(losses) == 12 and losses[-1] < losses[0]

    t.compiled.eval()  # the training run has ended: the next run may be eval
    accuracy = cstorch.metrics.AccuracyMetric("accuracy")

    @cstorch.trace
    def eval_step(batch):
        inputs, targets = batch
        outputs = t.compiled(inputs)
        accuracy(labels=targets.clone(), predictions=outputs.argmax(-1).int())
        return t.loss_fn(outputs, targets)

    validate = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn, seed=2), num_steps=4)
    with torch.no_grad():
        for batch in validate:
            eval_step(batch)
    assert 0.8 < float(accuracy) <= 1.0

    runs = _runs(ws_csd)[: len(_runs(ws_csd)) - before]
    assert [(r["mode"], r["status"], r["totalSamples"]) for r in reversed(runs)] == [
        ("train", "CLOSED", 12 * 32), ("eval", "CLOSED", 4 * 32)]
    for r in runs:
        assert _programmed(ws_csd, r["runId"]) == 1
    out = tmp_path / "out" / "executors"
    assert sorted(os.listdir(out)) == ["000001", "000002", "latest"]
    assert os.readlink(out / "latest") == "000002"
    assert train.artifact_dir == out / "000001" and validate.artifact_dir == out / "000002"  # Paths, as the real ones
    for number, mode, samples in (("000001", "train", 12 * 32), ("000002", "eval", 4 * 32)):
        perf = json.loads((out / number / "performance.json").read_text())
        assert perf["total_samples"] == samples
        assert (out / number / mode / f"params_{mode}.yaml").is_file()
        links = [name for name in os.listdir(out / number) if name.startswith("cs_")]
        assert len(links) == 1 and os.path.isdir(out / number / links[0])
    # two programs: another checksum for the eval step
    assert len({n for n in os.listdir(out / "000001") if n.startswith("cs_")}
               | {n for n in os.listdir(out / "000002") if n.startswith("cs_")}) == 2


def test_two_executors_at_once_are_refused(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    outer = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=4)
    inner = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=2)
    for batch in outer:
        t.step(batch)
        with pytest.raises(errors.InvalidState) as exc:
            next(iter(inner))
        assert exc.value.message == (
            "A DataExecutor is already running (at step 1 of 4): each DataExecutor is one run on the system, and "
            "the system runs one at a time.")
        assert "one after the other" in exc.value.hint
        break
    # the loop was left early: the next executor closes that run and opens its own
    for batch in inner:
        t.step(batch)
    first, second = _runs(ws_csd)[1], _runs(ws_csd)[0]
    assert (first["status"], first["totalSamples"]) == ("CLOSED", 32)
    assert (second["status"], second["totalSamples"]) == ("CLOSED", 2 * 32)


def test_num_steps_defaults_to_the_length_of_the_dataloader(ws_csd, tmp_path):
    """Relaxed: num_steps taken from len(dataloader) when omitted."""
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    dataloader = cstorch.utils.data.DataLoader(input_fn, n=5)
    executor = cstorch.utils.data.DataExecutor(dataloader)
    assert len(dataloader) == len(executor) == 5
    steps = [t.step(batch) for batch in executor]
    assert len(steps) == 5 and _runs(ws_csd)[0]["totalSamples"] == 5 * 32

    def stream():
        return iter([next(iter(input_fn()))])

    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(stream))
    assert "could not infer the number of steps" in exc.value.message
    assert exc.value.hint == "Please provide num_steps to the data executor."


def test_a_data_executor_needs_a_cstorch_dataloader(ws_csd, tmp_path):
    csx(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.utils.data.DataExecutor(input_fn(), num_steps=2)
    assert exc.value.message.startswith("Detected that dataloader was not wrapped using a "
                                        "cstorch.utils.data.DataLoader")
    assert "Got a DataLoader." in exc.value.message
    assert "cstorch.utils.data.DataLoader(input_fn, ...)" in exc.value.hint


def test_checkpoint_closures_run_on_the_checkpoint_steps_and_the_last(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    saved = []

    @cstorch.checkpoint_closure
    def save_checkpoint(step):
        path = tmp_path / f"checkpoint_{step}.mdl"
        cstorch.save({"model": t.net.state_dict(), "optimizer": t.optimizer.state_dict()}, str(path))
        saved.append(step)

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=10,
                                               checkpoint_steps=4)
    for step, batch in enumerate(executor, start=1):
        t.step(batch)
        save_checkpoint(step)
    assert saved == [4, 8, 10]
    final = cstorch.load(str(tmp_path / "checkpoint_10.mdl"))
    for name, tensor in t.net.state_dict().items():  # after the loop: the final weights
        assert torch.equal(final["model"][name], tensor)

    # a Schedule of 0-indexed steps: the 3rd and the 6th
    schedule = cstorch.utils.data.Schedule([cstorch.utils.data.Schedule.Range(2, 6, 3, include_last=False)])
    saved.clear()
    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=7,
                                               checkpoint_steps=schedule)
    for step, batch in enumerate(executor, start=1):
        t.step(batch)
        save_checkpoint(step)
    assert saved == [3, 6]

    saved.clear()  # checkpoint_steps=None: no checkpoint step in the run
    for step, batch in enumerate(cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn),
                                                                 num_steps=3), start=1):
        t.step(batch)
        save_checkpoint(step)
    assert saved == []


def test_weights_in_a_plain_step_closure_off_a_checkpoint_step_are_refused(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)

    @cstorch.step_closure
    def save_weights(step):
        cstorch.save({"model": t.net.state_dict()}, str(tmp_path / f"w_{step}.mdl"))

    @cstorch.step_closure
    def log_weight(weight):
        print(weight.norm())

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=6,
                                               checkpoint_steps=3)
    for step, batch in enumerate(executor, start=1):
        t.step(batch)
        if step == 3:
            save_weights(step)  # a checkpoint step: allowed
            assert (tmp_path / "w_3.mdl").is_file()
        if step == 4:
            with pytest.raises(errors.InvalidState) as exc:
                save_weights(step)
            assert exc.value.message == (
                "Cannot fetch the model's weights after step 4 of this DataExecutor's run: weights are only "
                "available on its checkpoint steps (steps 3, 6).")
            assert exc.value.hint.startswith("Save them with cstorch.save in a function decorated with "
                                             "@cstorch.checkpoint_closure")
            with pytest.raises(errors.InvalidState) as exc:  # a weight handed to a step closure
                log_weight(t.net[0].weight)
            assert exc.value.message.startswith("Attempting to get weight tensor '0.weight' in the step closure "
                                                "'log_weight'")
            assert "cstorch.save() API" in exc.value.hint and "@cstorch.checkpoint_closure" in exc.value.hint
    assert not (tmp_path / "w_4.mdl").exists()


def test_step_closures_run_on_activation_steps_made_compatible_with_the_checkpoint_schedule(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    seen, inside = [], []

    @cstorch.step_closure
    def record(loss, step):
        seen.append(step)

    @cstorch.step_closure
    def record_inside(loss):
        inside.append(loss.item())

    def body(batch):
        loss = t.body(batch)
        record_inside(loss)
        return loss

    step_fn = cstorch.trace(body)
    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=10,
                                               activation_steps=3)
    for step, batch in enumerate(executor, start=1):
        record(step_fn(batch), step)
    assert seen == [3, 6, 9, 10] and len(inside) == 4

    seen.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=10,
                                                   activation_steps=4, checkpoint_steps=6)
    assert executor.activation_steps == 2  # gcd(4, 6, 10): a checkpoint closure must be able to run there
    assert any("Activation frequency was reduced from 4 to 2" in str(w.message) for w in caught)

    @cstorch.checkpoint_closure
    def checkpoint(step):
        seen.append(("checkpoint", step))

    for step, batch in enumerate(executor, start=1):
        record(step_fn(batch), step)
        checkpoint(step)
    assert seen == [2, 4, 6, ("checkpoint", 6), 8, 10, ("checkpoint", 10)]


@pytest.mark.parametrize("mode", ["compile_only", "validate_only"])
def test_compile_only_and_validate_only_are_backend_arguments_and_run_one_step(ws_csd, tmp_path, mode, capsys):
    backend = csx(ws_csd, tmp_path, **{mode: True})
    t = Trainer(backend, model)
    before = _runs(ws_csd)[0]["runId"] if _runs(ws_csd) else None
    with pytest.warns(UserWarning, match="Specified num_steps > 1 when backend was configured for "
                                         "compile/validate only. Setting num_steps to 1."):
        executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=6)
    steps = [t.step(batch) for batch in executor]
    assert len(steps) == 1
    assert f"cstorch {mode}: step 'body' is valid for" in capsys.readouterr().out
    assert (_runs(ws_csd)[0]["runId"] if _runs(ws_csd) else None) == before  # no run was opened
    compiled = [n for n in os.listdir(tmp_path / "compile")] if (tmp_path / "compile").exists() else []
    assert (len(compiled) == 1) == (mode == "compile_only")


def test_a_step_outside_a_data_executor_is_refused(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    with pytest.raises(errors.InvalidState) as exc:
        for batch in cstorch.utils.data.DataLoader(input_fn):
            t.step(batch)
    assert exc.value.message == ("Detected that a data executor was not used: the trace function 'body' was called "
                                 "outside a DataExecutor's loop.")
    assert "cstorch.utils.data.DataExecutor(dataloader, ...)" in exc.value.hint


def test_the_executors_profiler_and_iteration_counters(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=3)
    seen = []
    for batch in executor:
        t.step(batch)
        seen.append((executor.iteration, executor.user_iteration, executor.on_final_iteration))
    assert seen == [(0, 1, False), (1, 2, False), (2, 3, True)]
    assert executor.profiler.total_samples == 3 * 32
    assert executor.profiler.global_rate() > 0 and executor.profiler.rate_tracker.total_samples == 96


def test_summaries_go_to_the_executors_writer(ws_csd, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)

    def body(batch):
        loss = t.body(batch)
        cstorch.summarize_scalar("loss", loss)
        return loss

    step_fn = cstorch.trace(body)
    writer = cstorch.utils.tensorboard.SummaryWriter(log_dir=str(tmp_path / "tb"))
    losses = [step_fn(batch).item() for batch in
              cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=4, writer=writer)]
    writer.close()
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    scalars = events.Scalars("loss")
    assert [s.step for s in scalars] == [1, 2, 3, 4]
    assert [round(s.value, 5) for s in scalars] == [round(v, 5) for v in losses]
    process_backend.reset()


def test_a_checkpoint_schedule_is_reckoned_from_its_intervals_not_walked_step_by_step(monkeypatch):
    """A run of a billion steps starts at once: its checkpoint steps, their last and their common
    divisor come from the intervals' arithmetic; on small runs they agree with match() step by step."""
    Schedule, Range = cstorch.utils.data.Schedule, cstorch.utils.data.Schedule.Range
    schedules = [Schedule.every(k, n) for k in (1, 3, 7) for n in (1, 5, 21, 22)] + [
        Schedule([Range(0, 4, 2, True), Range(9, 20, 5, False), Range(20, 23, 1, True)])]
    for schedule in schedules:
        for n in (1, 4, 10, 21, 30):
            walked = [i + 1 for i in range(n) if schedule.match(i)]
            assert list(schedule.steps(n)) == walked
            assert schedule.last(n) == (walked[-1] if walked else None)
            assert schedule.common_divisor(n) == math.gcd(*walked)
    huge = Schedule.every(1000, 10 ** 9)
    monkeypatch.setattr(Schedule, "match", lambda self, index: pytest.fail("a step was matched one by one"))
    assert (huge.common_divisor(10 ** 9), huge.last(10 ** 9)) == (1000, 10 ** 9)
    assert huge.describe(10 ** 9) == "steps 1000, 2000, 3000, 4000, 5000, 6000, …, 1000000000"
