"""Deterministic restart of the input, written for the later releases' API: the input function
returns a RestartableDataLoader, checkpoint closures save its state beside the model's, and a
run resumed from a checkpoint continues the input exactly where the saved run was.

    python -m csadmin.cstorch examples/cstorch/restart_v2.py --out-dir out --num-steps 6 --checkpoint-steps 4
    python -m csadmin.cstorch examples/cstorch/restart_v2.py --out-dir out2 --num-steps 6 \\
        --checkpoint out/checkpoint_4.mdl                  # steps 5 … 10, as one run of 10 would

csd comes from $CS_CONNECT / $CS_KEY (or --mgmt-address / --key); `--workers N` feeds the run
from N input workers; `--backend CPU` runs with no system. Every step prints `batch <step>
<digest of its inputs>`, and the end `weights <digest>`: a resumed run prints the lines an
uninterrupted one prints from the same step on.
"""

import argparse
import hashlib
import os
import sys

import torch

try:  # under `python -m csadmin.cstorch` the real package's name is there
    import cerebras.pytorch as cstorch
except ImportError:
    import csadmin.cstorch as cstorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import build_model, dataset  # noqa: E402

SAMPLES, BATCH_SIZE = 256, 32  # an epoch of 8 batches, reshuffled every epoch


class EpochShuffler(torch.utils.data.Sampler):
    """Batches of sample indices from an endless stream: epoch e is a permutation seeded by e.
    Input worker `rank` of `ranks` takes the run's batches rank, rank + ranks, … from `start`
    (the run takes one batch from each worker in turn)."""

    def __init__(self, rank: int, ranks: int):
        self.rank, self.ranks, self.start = rank, ranks, 0

    def __iter__(self):
        batch = self.start + self.rank
        while True:
            epoch, offset = divmod(batch * BATCH_SIZE, SAMPLES)
            order = torch.randperm(SAMPLES, generator=torch.Generator().manual_seed(epoch))
            yield order[offset:offset + BATCH_SIZE].tolist()
            batch += self.ranks


class RestartableShuffledLoader(torch.utils.data.DataLoader):
    """A torch DataLoader with the RestartableDataLoader methods: its state is the samples the
    run has streamed, each worker's from cstorch.distributed.get_worker_state()."""

    def __init__(self):
        worker = cstorch.utils.data.worker_info()
        self.shuffler = EpochShuffler(worker.task_id, worker.num_tasks)
        super().__init__(torch.utils.data.TensorDataset(*dataset(SAMPLES, seed=0)), batch_sampler=self.shuffler)

    def state_dict(self):
        worker_state = cstorch.distributed.get_worker_state()  # this worker, in this run
        return {"resumed_at": self.shuffler.start * BATCH_SIZE, "samples_streamed": worker_state.samples_streamed}

    def aggregate_state_dict(self, worker_states):
        return {"samples_streamed": worker_states[0]["resumed_at"] + sum(s["samples_streamed"] for s in worker_states)}

    def deaggregate_state_dict(self, aggregated_state_dict, strict=True):
        return aggregated_state_dict  # every worker needs the total

    def load_state_dict(self, state_dict, strict=True):
        self.shuffler.start = state_dict["samples_streamed"] // BATCH_SIZE


def digest(*tensors) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default="out")
    p.add_argument("--backend", default="CSX", choices=["CSX", "CPU"])
    p.add_argument("--mgmt-address", help="csd's connection file or endpoint (default: $CS_CONNECT)")
    p.add_argument("--key", help="your secret key file (default: $CS_KEY)")
    p.add_argument("--workers", type=int, default=1, help="input workers (num_workers_per_csx)")
    p.add_argument("--num-steps", type=int, default=10, help="steps of this run")
    p.add_argument("--checkpoint-steps", type=int, default=None)
    p.add_argument("--checkpoint", dest="checkpoint_path", help="resume from this checkpoint")
    return p.parse_args()


def main(args):
    if args.backend == "CSX":
        cluster_config = cstorch.distributed.ClusterConfig(mgmt_address=args.mgmt_address, credentials_path=args.key,
                                                           num_workers_per_csx=args.workers)
        backend = cstorch.backend("CSX", artifact_dir=args.out_dir, cluster_config=cluster_config,
                                  compile_dir=os.path.join(args.out_dir, "compile"))
    else:
        backend = cstorch.backend(args.backend, artifact_dir=args.out_dir)
    with backend.device:
        model = build_model()
    compiled_model = cstorch.compile(model, backend)
    optimizer = cstorch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    dataloader = cstorch.utils.data.DataLoader(RestartableShuffledLoader)

    global_step = 0
    if args.checkpoint_path is not None:
        state_dict = cstorch.load(args.checkpoint_path)
        model.load_state_dict(state_dict["model"])
        optimizer.load_state_dict(state_dict["optimizer"])
        if "dataloader" in state_dict:
            dataloader.load_state_dict(state_dict["dataloader"])
        global_step = state_dict["global_step"]

    @cstorch.trace
    def training_step(batch):
        inputs, targets = batch
        loss = loss_fn(compiled_model(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    @cstorch.checkpoint_closure
    def save_checkpoint(step):
        cstorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                      "dataloader": dataloader.state_dict(), "global_step": step},
                     os.path.join(args.out_dir, f"checkpoint_{step}.mdl"))

    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=args.num_steps,
                                               checkpoint_steps=args.checkpoint_steps)
    for step, batch in enumerate(executor, start=global_step + 1):
        print(f"batch {step} {digest(*batch)}", flush=True)
        training_step(batch)
        save_checkpoint(step)
    print(f"weights {digest(*model.parameters())}", flush=True)


if __name__ == "__main__":
    main(parse_args())
