"""Deterministic restart of the input (the later releases' RestartableDataLoader): a run saves the
DataLoader's state in a checkpoint closure, a new process loads it, and the batches it sees next
are the ones an uninterrupted run would have seen — in-process and with input workers, on a real
csd — and each refusal of the protocol."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch import v2
from tests.cstorch.helpers import configure, model
from tests.harness import ROOT

SAMPLES, BATCH = 24, 4  # an epoch is 6 batches: the runs below cross epochs, and resume inside one


def dataset():
    """SAMPLES samples of helpers.model's 8 features, the sample's id in feature 7."""
    x = torch.randn(SAMPLES, 8, generator=torch.Generator().manual_seed(0))
    x[:, 7] = torch.arange(SAMPLES).float()
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())


class Stream:
    """A batch sampler: global batch b of an endless stream, each epoch reshuffled by its number;
    input worker `rank` of `ranks` takes batches start + rank, start + rank + ranks, … (the run
    takes one from each worker in turn, so the run's k-th batch is global batch start + k - 1)."""

    def __init__(self, rank: int, ranks: int):
        self.rank, self.ranks, self.start = rank, ranks, 0

    def __iter__(self):
        b = self.start + self.rank
        while True:
            epoch, offset = divmod(b * BATCH, SAMPLES)
            order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(epoch))
            yield order[offset:offset + BATCH].tolist()
            b += self.ranks


class RestartableIds(torch.utils.data.DataLoader):
    """The docs' shape: a torch DataLoader with the four methods, its state from get_worker_state()."""

    def __init__(self):
        info = cstorch.utils.data.worker_info()
        stream = Stream(info.task_id, info.num_tasks)
        super().__init__(dataset(), batch_sampler=stream)
        self.stream = stream

    def state_dict(self):
        worker = cstorch.distributed.get_worker_state()
        return {"start": self.stream.start, "worker_id": worker.global_worker_id, "workers": worker.total_num_workers,
                "step": worker.appliance_step, "worker_step": worker.worker_step,
                "samples_streamed": worker.samples_streamed}

    def aggregate_state_dict(self, worker_states):
        # the counters are this run's: the batches streamed so far are where it started plus them
        return {"batches": worker_states[0]["start"] + sum(s["worker_step"] for s in worker_states),
                "workers": worker_states}

    def deaggregate_state_dict(self, aggregated_state_dict, strict=True):
        return {"batches": aggregated_state_dict["batches"]}

    def load_state_dict(self, state_dict, strict=True):
        self.stream.start = state_dict["batches"]


def ids_of(batch) -> list[int]:
    return batch[0][:, 7].long().tolist()


def global_batches(first: int, end: int) -> list[list[int]]:
    """The ids of the stream's global batches first … end - 1."""
    stream = Stream(0, 1)
    stream.start = first
    return [ids for ids, _ in zip(iter(stream), range(end - first))]


def csx_with_workers(daemon, tmp_path, workers: int = 2):
    """A 2.x trainer on a CSX backend whose input is fed by `workers` input workers (1: in-process)."""
    cluster = cstorch.distributed.ClusterConfig(mgmt_address=daemon.connection_file,
                                                credentials_path=daemon.admin_key, num_workers_per_csx=workers)
    return v2.Trainer(v2.csx(daemon, tmp_path, cluster_config=cluster), model, lr=0.01)


def run_process(daemon, tmp_path, num_steps: int, checkpoint_steps=None, resume=None, workers: int = 1):
    """One training process (a fresh backend): resume from `resume` (model, optimizer, input), run
    `num_steps` saving checkpoints with the input's state; the ids of each step's batch, the final
    weights and the saved input states by step."""
    process_backend.reset()
    tmp_path.mkdir(parents=True, exist_ok=True)
    trainer = csx_with_workers(daemon, tmp_path, workers)
    dataloader = cstorch.utils.data.DataLoader(RestartableIds)
    if resume is not None:
        saved = cstorch.load(str(resume))
        trainer.net.load_state_dict(saved["model"])
        trainer.optimizer.load_state_dict(saved["optimizer"])
        dataloader.load_state_dict(saved["dataloader"])
    states = {0: dataloader.state_dict()}  # before the first step: where it starts

    @cstorch.checkpoint_closure
    def save(step):
        states[step] = dataloader.state_dict()
        cstorch.save({"model": trainer.net.state_dict(), "optimizer": trainer.optimizer.state_dict(),
                      "dataloader": states[step]}, str(tmp_path / f"c{step}.mdl"))

    seen = []
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=num_steps, checkpoint_steps=checkpoint_steps)
    for step, batch in enumerate(executor, start=1):
        seen.append(ids_of(batch))
        trainer.step(batch)
        save(step)
    return seen, [p.detach().clone() for p in trainer.net.parameters()], states


@pytest.mark.parametrize("workers", [1, 2])
def test_a_resumed_run_sees_the_batches_an_uninterrupted_run_would_have_and_ends_with_its_weights(
        ws_csd, tmp_path, workers):
    whole, whole_weights, _ = run_process(ws_csd, tmp_path / "whole", 10, workers=workers)
    first, _, states = run_process(ws_csd, tmp_path / "first", 6, checkpoint_steps=4, workers=workers)
    assert first == whole[:6] and sorted(states) == [0, 4, 6] and states[0]["batches"] == 0
    saved = states[4]
    assert saved["batches"] == 4 and [w["step"] for w in saved["workers"]] == [4] * workers
    # each worker's share of the 4 steps, taken in turn, and the samples in it
    assert [w["worker_step"] for w in saved["workers"]] == [4 // workers] * workers
    assert [w["samples_streamed"] for w in saved["workers"]] == [4 // workers * BATCH] * workers
    assert [(w["worker_id"], w["workers"]) for w in saved["workers"]] == [(k, workers) for k in range(workers)]

    resumed, resumed_weights, again = run_process(ws_csd, tmp_path / "resumed", 6, checkpoint_steps=3,
                                                  resume=tmp_path / "first" / "c4.mdl", workers=workers)
    assert resumed == whole[4:10]
    assert [again[0]["batches"], again[3]["batches"], again[6]["batches"]] == [4, 7, 10]
    for got, want in zip(resumed_weights, whole_weights):
        assert torch.equal(got, want)


@pytest.mark.parametrize("workers", [1, 2])
def test_data_executors_in_turn_continue_the_input_unless_a_state_is_loaded_between(ws_csd, tmp_path, workers):
    trainer = csx_with_workers(ws_csd, tmp_path, workers)
    dataloader = cstorch.utils.data.DataLoader(RestartableIds)

    def run(num_steps):
        seen = []
        for batch in cstorch.utils.data.DataExecutor(dataloader, num_steps=num_steps):
            seen.append(ids_of(batch))
            trainer.step(batch)
        return seen

    assert run(4) == global_batches(0, 4)
    assert dataloader.state_dict()["batches"] == 4  # after the loop, before the next
    assert run(3) == global_batches(4, 7)
    dataloader.load_state_dict({"batches": 20})
    assert run(2) == global_batches(20, 22)


# -- the protocol's pieces and its refusals ----------------------------------------------------------


def cpu_trainer(tmp_path):
    return v2.Trainer(cstorch.backend("CPU", artifact_dir=str(tmp_path / "out")), model, lr=0.01)


def test_the_protocol_is_the_four_methods_and_a_worker_checkpoint_knows_its_place():
    assert isinstance(RestartableIds(), cstorch.RestartableDataLoader)
    assert not isinstance(torch.utils.data.DataLoader(dataset()), cstorch.utils.data.RestartableDataLoader)
    checkpoint = cstorch.DataLoaderCheckpoint(local_worker_id=1, num_workers_per_csx=4, num_csx=2, wse_id=1,
                                              appliance_step=10, worker_step=3, samples_streamed=12,
                                              user_state_dict=None)
    assert (checkpoint.global_worker_id, checkpoint.total_num_workers) == (5, 8)
    assert cstorch.get_worker_state is cstorch.distributed.get_worker_state
    assert cstorch.utils.data.DataLoaderCheckpoint is cstorch.DataLoaderCheckpoint


def test_get_worker_state_answers_once_and_only_inside_state_dict(tmp_path):
    with pytest.raises(errors.InvalidState, match="must only be called once, inside your dataloader's "
                                                  "implementation of state_dict"):
        cstorch.distributed.get_worker_state()

    class AsksTwice(RestartableIds):
        def state_dict(self):
            cstorch.distributed.get_worker_state()
            return super().state_dict()

    cpu_trainer(tmp_path)
    dataloader = cstorch.utils.data.DataLoader(AsksTwice)
    with pytest.raises(errors.InvalidState, match="must only be called once"):
        dataloader.state_dict()
    with pytest.raises(errors.InvalidState, match="must only be called once"):  # and never after it
        cstorch.distributed.get_worker_state()


def test_an_input_that_is_not_restartable_has_no_state(tmp_path):
    cpu_trainer(tmp_path)
    dataloader = cstorch.utils.data.DataLoader(lambda: torch.utils.data.DataLoader(dataset(), batch_size=BATCH))
    assert not dataloader.is_restartable and cstorch.utils.data.DataLoader(RestartableIds).is_restartable
    with pytest.raises(errors.InvalidState, match="not configured for getting state: .* returned a DataLoader, "
                                                  "which does not implement the RestartableDataLoader interface"):
        dataloader.state_dict()
    with pytest.raises(errors.InvalidState, match="not configured for setting state"):
        dataloader.load_state_dict({"batches": 4})


def test_load_state_dict_and_deaggregate_state_dict_must_agree_on_strict(tmp_path):
    class StrictOnlyOnLoad(RestartableIds):
        def deaggregate_state_dict(self, aggregated_state_dict):
            return aggregated_state_dict

    cpu_trainer(tmp_path)
    with pytest.raises(errors.InvalidArgument, match="takes `strict` in only one of load_state_dict and "
                                                     "deaggregate_state_dict: either both or none"):
        cstorch.utils.data.DataLoader(StrictOnlyOnLoad)

    class NeitherTakesStrict(RestartableIds):
        def deaggregate_state_dict(self, aggregated_state_dict):
            return {"batches": aggregated_state_dict["batches"]}

        def load_state_dict(self, state_dict):
            self.stream.start = state_dict["batches"]

    dataloader = cstorch.utils.data.DataLoader(NeitherTakesStrict)  # called without it
    dataloader.load_state_dict({"batches": 3})
    assert dataloader.state_dict()["batches"] == 3


def test_the_state_is_asked_for_on_checkpoint_steps_and_loaded_before_the_first_step(tmp_path):
    trainer = cpu_trainer(tmp_path)
    dataloader = cstorch.utils.data.DataLoader(RestartableIds)
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=4, checkpoint_steps=2)
    for step, batch in enumerate(executor, start=1):
        trainer.step(batch)
        if step == 1:
            with pytest.raises(errors.InvalidState, match=r"can only be requested at a checkpoint step.*this is "
                                                          r"step 1.*checkpoint_closure"):
                dataloader.state_dict()
            with pytest.raises(errors.InvalidState, match="can only be loaded before execution"):
                dataloader.load_state_dict({"batches": 0})
        if step == 2:
            assert dataloader.state_dict()["batches"] == 2
    assert dataloader.state_dict()["batches"] == 4  # after the loop: the final state


# -- with input workers ----------------------------------------------------------------------------


def test_the_workers_state_is_only_on_their_checkpoint_steps(ws_csd, tmp_path):
    trainer = csx_with_workers(ws_csd, tmp_path)
    dataloader = cstorch.utils.data.DataLoader(RestartableIds)
    dataloader.load_state_dict({"batches": 10})
    for step, batch in enumerate(cstorch.utils.data.DataExecutor(dataloader, num_steps=6, checkpoint_steps=2),
                                 start=1):
        trainer.step(batch)
        if step == 3:
            break  # out of the loop every step's weights may be fetched, but the workers captured only theirs
    with pytest.raises(errors.InvalidState, match=r"requested at step 3, but this step was not preconfigured as a "
                                                  r"checkpoint step: .* on steps 2, 4, 6\. Request it in "
                                                  r".*checkpoint_closure"):
        dataloader.state_dict()
    seen = []  # so the next run cannot continue that one: its workers start where that one's did
    for batch in cstorch.utils.data.DataExecutor(dataloader, num_steps=2):
        seen.append(ids_of(batch))
        trainer.step(batch)
    assert seen == global_batches(10, 12)


def test_a_trainers_copy_that_cannot_load_warns_and_the_workers_resume(ws_csd, tmp_path):
    class OnlyWorkersLoad(RestartableIds):
        def load_state_dict(self, state_dict, strict=True):
            if cstorch.utils.data.worker_info().num_tasks == 1:  # the training process's copy
                raise KeyError("shard")
            super().load_state_dict(state_dict, strict)

    trainer = csx_with_workers(ws_csd, tmp_path)
    dataloader = cstorch.utils.data.DataLoader(OnlyWorkersLoad)
    with pytest.warns(UserWarning, match="Could not load the state onto the DataLoader in this process "
                                         r"\(KeyError: 'shard'\). The input workers load it"):
        dataloader.load_state_dict({"batches": 5})
    seen = []
    for batch in cstorch.utils.data.DataExecutor(dataloader, num_steps=2):
        seen.append(ids_of(batch))
        trainer.step(batch)
    assert seen == global_batches(5, 7)


def test_a_worker_whose_input_is_not_restartable_or_whose_state_is_not_data_fails_the_run(ws_csd, tmp_path):
    def mixed():
        if cstorch.utils.data.worker_info().task_id == 1:
            return torch.utils.data.DataLoader(dataset(), batch_size=BATCH)
        return RestartableIds()

    trainer = csx_with_workers(ws_csd, tmp_path)
    with pytest.raises(errors.InputWorkerFailed, match="input worker 1: the input function returned a DataLoader, "
                                                       "which is not a RestartableDataLoader"):
        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(mixed), num_steps=2):
            trainer.step(batch)

    class Opaque(RestartableIds):
        def state_dict(self):
            return {"sampler": self.stream}  # an object, not data

    process_backend.reset()  # a new process
    trainer = csx_with_workers(ws_csd, tmp_path / "again")
    with pytest.raises(errors.InputWorkerFailed, match="sent a dataloader state that is not tensors, numbers, "
                                                       "strings or containers of them"):
        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(Opaque), num_steps=4,
                                                     checkpoint_steps=1):
            trainer.step(batch)


def test_input_workers_without_a_data_executor_keep_no_state(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    dataloader = cstorch.utils.data.DataLoader(RestartableIds, num_steps=2)
    with pytest.raises(errors.InvalidState, match=r"the input workers of a run without a DataExecutor keep no "
                                                  r"state \(num_workers_per_csx=2\)"):
        dataloader.state_dict()


# -- examples/cstorch/restart_v2.py: two processes, as a user restarts ---------------------------------


def restart_example(daemon, out, *args) -> list[str]:
    done = subprocess.run([sys.executable, "-m", "csadmin.cstorch", os.path.join(ROOT, "examples", "cstorch",
                                                                                 "restart_v2.py"),
                           "--out-dir", str(out), "--workers", "2", *args],
                          env=daemon.env(), cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith(("batch ", "weights "))]


def test_the_restart_example_resumed_in_a_new_process_prints_what_one_uninterrupted_run_prints(ws_csd, tmp_path):
    whole = restart_example(ws_csd, tmp_path / "whole", "--num-steps", "10")
    first = restart_example(ws_csd, tmp_path / "first", "--num-steps", "6", "--checkpoint-steps", "4")
    resumed = restart_example(ws_csd, tmp_path / "resumed", "--num-steps", "6",
                              "--checkpoint", str(tmp_path / "first" / "checkpoint_4.mdl"))
    assert len(whole) == 11 and first[:6] == whole[:6] and first[6] != whole[10]
    assert resumed == whole[4:]  # steps 5 … 10 and the final weights
