"""Deterministic restart of the input (the later releases' RestartableDataLoader): a run saves the
DataLoader's state in a checkpoint closure, a new process loads it, and the batches it sees next
are the ones an uninterrupted run would have seen — in-process and with input workers, on a real
csd — and each refusal of the protocol."""

from __future__ import annotations

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch import state
from tests.cstorch import v2
from tests.cstorch.helpers import configure, model

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


def run_process(daemon, tmp_path, num_steps: int, checkpoint_steps=None, resume=None, workers: int = 1):
    """One training process (a fresh backend): resume from `resume` (model, optimizer, input), run
    `num_steps` saving checkpoints with the input's state; the ids of each step's batch, the final
    weights and the saved input states by step."""
    state.reset()
    tmp_path.mkdir(parents=True, exist_ok=True)
    cluster = cstorch.distributed.ClusterConfig(mgmt_address=daemon.connection_file,
                                                credentials_path=daemon.admin_key, num_workers_per_csx=workers)
    trainer = v2.Trainer(v2.csx(daemon, tmp_path, cluster_config=cluster), model, lr=0.01)
    dataloader = cstorch.utils.data.DataLoader(RestartableIds)
    if resume is not None:
        saved = cstorch.load(str(resume))
        trainer.net.load_state_dict(saved["model"])
        trainer.optimizer.load_state_dict(saved["optimizer"])
        dataloader.load_state_dict(saved["dataloader"])
    states = {}

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
    assert first == whole[:6] and sorted(states) == [4, 6]
    saved = states[4]
    assert saved["batches"] == 4 and [w["step"] for w in saved["workers"]] == [4] * workers
    # each worker's share of the 4 steps, taken in turn, and the samples in it
    assert [w["worker_step"] for w in saved["workers"]] == [4 // workers] * workers
    assert [w["samples_streamed"] for w in saved["workers"]] == [4 // workers * BATCH] * workers
    assert [(w["worker_id"], w["workers"]) for w in saved["workers"]] == [(k, workers) for k in range(workers)]

    resumed, resumed_weights, again = run_process(ws_csd, tmp_path / "resumed", 6, checkpoint_steps=3,
                                                  resume=tmp_path / "first" / "c4.mdl", workers=workers)
    assert resumed == whole[4:10]
    assert [again[3]["batches"], again[6]["batches"]] == [7, 10]
    for got, want in zip(resumed_weights, whole_weights):
        assert torch.equal(got, want)
