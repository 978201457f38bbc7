"""cstorch.utils.data.DataLoader: the document's step arithmetic over real torch DataLoaders, its
mutually exclusive groups, the run's last step, and 000's fixed batch size."""

import pytest
import torch
from torch.utils.data import DataLoader as TorchLoader
from torch.utils.data import IterableDataset, TensorDataset

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend.config import Config
from csadmin.cstorch.utils.data import DataLoader
from csadmin.errors import InvalidArgument, ReprogramForbidden
from tests.cstorch.run_state import fresh_run  # noqa: F401


def input_fn(samples=40, batch_size=8, drop_last=True, shuffle=False):
    data = TensorDataset(torch.arange(samples, dtype=torch.float32).unsqueeze(1), torch.arange(samples) % 3)
    return TorchLoader(data, batch_size=batch_size, drop_last=drop_last, shuffle=shuffle)


class Stream(IterableDataset):
    def __init__(self, batches):
        self.batches = batches

    def __iter__(self):
        return iter(torch.full((4, 2), float(i)) for i in range(self.batches))


def _firsts(loader):
    return [int(batch[0][0, 0]) for batch in loader]


def test_num_steps_restarts_the_input_and_max_steps_caps_it(fresh_run):
    loader = DataLoader(input_fn, num_steps=12, batch_size=8)  # 5 batches a pass
    assert len(loader) == 12 and _firsts(loader) == [0, 8, 16, 24, 32] * 2 + [0, 8]
    assert fresh_run.run.last_step == 12
    assert len(DataLoader(input_fn, num_steps=12, max_steps=7)) == 7
    assert len(DataLoader(input_fn, num_steps=3, max_steps=7)) == 3


def test_one_iteration_is_one_epoch_as_the_vendors_runner_loops(fresh_run):
    """R1.8's runner: `for epoch in range(dataloader.num_epochs): for batch in dataloader:` feeds
    the total, so one iteration is one epoch (len() its batches, as torch's DataLoader)."""
    loader = DataLoader(input_fn, num_epochs=2, steps_per_epoch=3)
    assert (loader.num_steps, loader.num_epochs, loader.steps_per_epoch, len(loader)) == (6, 2, 3, 3)
    assert _firsts(loader) == [0, 8, 16] and fresh_run.run.last_step == 6
    fresh_run.run.step = 3  # the first epoch's steps ran
    assert _firsts(loader) == [0, 8, 16] and fresh_run.run.last_step == 6
    assert _firsts(loader) == []  # every step of the schedule was fed
    whole = DataLoader(input_fn, num_epochs=2)  # steps_per_epoch: the input's length
    assert (len(whole), whole.num_epochs) == (5, 2)
    assert [_firsts(whole) for _ in range(whole.num_epochs)] == [[0, 8, 16, 24, 32]] * 2
    capped = DataLoader(input_fn, num_epochs=3, max_steps=7)  # 7 steps, split as the real API does: 4 + 3
    assert (capped.num_steps, capped.num_epochs, len(capped)) == (7, 2, 4)
    assert [_firsts(capped) for _ in range(capped.num_epochs)] == [[0, 8, 16, 24], [0, 8, 16]]
    fresh_run.run.step = 100  # a second DataLoader in the same run ends its steps later
    list(DataLoader(input_fn, num_steps=7))
    assert fresh_run.run.last_step == 107


def test_with_num_steps_the_counts_are_one_epoch_of_all_steps(fresh_run):
    loader = DataLoader(input_fn, num_steps=12)
    assert (loader.num_steps, loader.num_epochs, loader.steps_per_epoch) == (12, 1, 12)
    assert [len(_firsts(loader)) for _ in range(loader.num_epochs)] == [12]
    alone = DataLoader(input_fn, max_steps=7)  # max_steps alone: that many steps, the input restarted
    assert (alone.num_steps, alone.num_epochs, _firsts(alone)) == (7, 1, [0, 8, 16, 24, 32, 0, 8])


def test_initial_step_resumes_the_step_count_and_the_data(fresh_run):
    """A run resumed from the checkpoint of step 3: its steps are numbered on from 3 (checkpoint
    steps and the last step are global), and the data continues with the input's batch 3."""
    loader = DataLoader(input_fn, num_steps=4, initial_step=3)
    assert _firsts(loader) == [24, 32, 0, 8]
    assert (fresh_run.run.first_step, fresh_run.run.step, fresh_run.run.last_step) == (3, 3, 7)
    fresh_run.run.step, fresh_run.config = 6, Config(checkpoint_steps=3)
    assert fresh_run.is_checkpoint_step() and fresh_run.is_checkpoint_step(3) and not fresh_run.is_checkpoint_step(5)
    resumed = DataLoader(input_fn, max_steps=10, initial_step=8)  # max_steps is the last global step
    assert resumed.num_steps == 2
    with pytest.raises(InvalidArgument, match="the run resumes at step 10, which already reaches max_steps 10"):
        DataLoader(input_fn, max_steps=10, initial_step=10)
    with pytest.raises(InvalidArgument, match="initial_step must be a whole number ≥ 0"):
        DataLoader(input_fn, num_steps=1, initial_step=-1)


def test_the_torch_dataloader_attributes_are_known_before_the_first_batch(fresh_run):
    loader = DataLoader(input_fn, num_steps=3, samples=40, batch_size=8)
    assert len(loader.dataset) == 40 and loader.batch_size == 8 and loader.num_workers == 0
    threaded = DataLoader(lambda: TorchLoader(TensorDataset(torch.zeros(8, 1)), batch_size=4, num_workers=2),
                          num_steps=1)
    assert threaded.num_workers == 2  # the input's own torch workers load its batches
    stream = DataLoader(lambda: [torch.zeros(4, 2)] * 3)  # a plain iterable: no dataset, no batch size yet
    assert stream.batch_size is None
    with pytest.raises(AttributeError, match="the input function returned a list, which has no dataset"):
        stream.dataset
    next(iter(stream))
    assert stream.batch_size == 4


def test_neither_group_is_one_pass_and_a_stream_of_unknown_length_runs_out(fresh_run):
    assert _firsts(DataLoader(input_fn)) == [0, 8, 16, 24, 32]
    stream = DataLoader(lambda: TorchLoader(Stream(5), batch_size=None))
    assert [int(b[0, 0]) for b in stream] == [0, 1, 2, 3, 4] and fresh_run.run.last_step is None
    with pytest.raises(TypeError, match="length is unknown"):
        len(stream)
    assert len(DataLoader(lambda: TorchLoader(Stream(5), batch_size=None), max_steps=3)) == 3
    streamed = DataLoader(lambda: TorchLoader(Stream(5), batch_size=None), num_steps=7)
    assert [int(b[0, 0]) for b in streamed] == [0, 1, 2, 3, 4, 0, 1]


def test_arguments_not_the_loaders_own_go_to_the_input_function():
    seen = []

    def fn(a, b=0, *, batch_size):
        seen.append((a, b, batch_size))
        return input_fn(batch_size=batch_size)

    DataLoader(fn, 1, num_steps=2, b=2, batch_size=4)
    assert seen == [(1, 2, 4)]


@pytest.mark.parametrize("kwargs, message", [
    (dict(num_steps=5, num_epochs=2), "num_steps and num_epochs/steps_per_epoch are mutually exclusive"),
    (dict(num_steps=5, steps_per_epoch=2), "mutually exclusive"),
    (dict(steps_per_epoch=2), "steps_per_epoch needs num_epochs"),
    (dict(num_steps=0), "num_steps must be a whole number ≥ 1; got 0"),
    (dict(max_steps=2.5), "max_steps must be a whole number ≥ 1; got 2.5"),
    (dict(num_epochs=1, steps_per_epoch=6), r"steps_per_epoch 6 exceeds the input's length \(5 batches\)"),
])
def test_bad_step_counts_are_refused(kwargs, message):
    with pytest.raises(InvalidArgument, match=message):
        DataLoader(input_fn, **kwargs)


def test_inputs_that_cannot_feed_a_run_are_refused():
    with pytest.raises(InvalidArgument, match="input_fn must be a function"):
        DataLoader(input_fn(), num_steps=1)
    with pytest.raises(InvalidArgument, match="returned a int, not an iterable"):
        DataLoader(lambda: 3, num_steps=1)
    with pytest.raises(InvalidArgument, match="num_epochs needs steps_per_epoch: the input function's dataloader "
                                              "has no length"):
        DataLoader(lambda: Stream(3), num_epochs=2)
    with pytest.raises(InvalidArgument, match="epoch 1 ended after 3 batches; steps_per_epoch is 4"):
        list(DataLoader(lambda: Stream(3), num_epochs=2, steps_per_epoch=4))
    with pytest.raises(InvalidArgument, match="yielded no batch"):
        DataLoader(input_fn, num_epochs=1, samples=4, batch_size=8)  # drop_last: no batch at all
    with pytest.raises(InvalidArgument, match="yielded no batch"):
        list(DataLoader(lambda: Stream(0), num_steps=3))


def test_a_batch_of_another_size_is_refused_with_the_drop_last_advice():
    loader = DataLoader(input_fn, num_steps=10, samples=20, batch_size=8, drop_last=False)
    batches = iter(loader)
    assert next(batches)[0].shape[0] == 8 and next(batches)[0].shape[0] == 8 and loader.batch_size == 8
    with pytest.raises(ReprogramForbidden) as refused:
        next(batches)
    assert str(refused.value) == (
        "Inconsistent batch sizes detected: batch 3 has size 4, the first batch had 8 (the fabric is programmed "
        "for one batch shape). To ensure a fixed batch size across all steps, set drop_last=True when batching "
        "in the input function (torch.utils.data.DataLoader(..., drop_last=True)).")
    assert len(list(DataLoader(input_fn, num_steps=10, samples=20, batch_size=8, drop_last=True))) == 10


def test_worker_info_in_the_training_process_is_one_task():
    info = cstorch.utils.data.worker_info()
    assert info == (0, 1) and (info.task_id, info.num_tasks) == (0, 1)
    assert (cstorch.utils.data.task_id(), cstorch.utils.data.num_tasks()) == (0, 1)


def test_constructing_a_dataloader_never_ends_the_process(fresh_run, monkeypatch, tmp_path):
    """A launcher's input-only role (an input worker task, an analyzer task) is taken by
    `python -m csadmin.cstorch`, which runs the script: the environment alone changes nothing, and
    in the role the constructor stops the script with the input function — the runner serves it."""
    monkeypatch.setenv("CSTORCH_ANALYZE_OUT", str(tmp_path))
    assert len(DataLoader(input_fn, num_steps=2)) == 2  # not under the runner: an ordinary DataLoader
    from csadmin.cstorch.utils.data._utils import roles

    fresh_run.input_role = roles.from_environment()
    assert fresh_run.input_role.name == "cs_input_analyzer task"
    with pytest.raises(roles.InputTaken) as taken:
        DataLoader(input_fn, 7, num_steps=2, batch_size=4)
    assert (taken.value.input_fn, taken.value.args, taken.value.kwargs) == (input_fn, (7,), {"batch_size": 4})
    assert not isinstance(taken.value, Exception)  # a script's `except Exception` does not swallow it
