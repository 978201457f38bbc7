"""Shared pieces of the later releases' (2.x) tests: a CSX backend on a test csd, the input as a
cstorch DataLoader, and a training step written the way public 2.x scripts write it."""

from __future__ import annotations

import torch

import csadmin.cstorch as cstorch
from tests.cstorch.helpers import batches
from tests.harness import Daemon


def csx(daemon: Daemon, tmp_path, **kwargs):
    """cstorch.backend("CSX", ...) on `daemon`, its artifacts under tmp_path/out."""
    cluster = cstorch.distributed.ClusterConfig(mgmt_address=daemon.connection_file, credentials_path=daemon.admin_key)
    return cstorch.backend("CSX", artifact_dir=str(tmp_path / "out"), compile_dir=str(tmp_path / "compile"),
                           cluster_config=kwargs.pop("cluster_config", cluster), **kwargs)


def input_fn(n: int = 6, batch_size: int = 32, seed: int = 1):
    """`n` batches of helpers.batches' separable problem as a torch DataLoader (drop_last)."""
    data = batches(n, batch_size, seed)
    x, y = torch.cat([b[0] for b in data]), torch.cat([b[1] for b in data])
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=batch_size, drop_last=True)


def synthetic_input(batch_size: int = 32):
    """Two batches of a separable problem from a cstorch.SyntheticDataset of index → sample callables."""
    g = torch.Generator().manual_seed(3)
    features = torch.randn(64, 8, generator=g)
    dataset = cstorch.SyntheticDataset((lambda i: features[i], lambda i: (features[i, 0] > 0).long()), num_samples=64)
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, drop_last=True)


class Trainer:
    """The 2.x shape: the model built under `with backend.device:`, compiled for the backend, a
    cstorch optimizer, and a @cstorch.trace step over (inputs, targets) batches."""

    def __init__(self, backend, net_fn, lr: float = 0.1):
        with backend.device:
            self.net = net_fn()
        self.compiled = cstorch.compile(self.net, backend)
        self.optimizer = cstorch.optim.SGD(self.net.parameters(), lr=lr, momentum=0.9)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.step = cstorch.trace(self.body)

    def body(self, batch):
        inputs, targets = batch
        loss = self.loss_fn(self.compiled(inputs), targets)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return loss


def train_saving_checkpoints(trainer: Trainer, step_fn, directory, num_steps: int, checkpoint_steps: int,
                             each=None) -> list[int]:
    """Run `step_fn` over a DataExecutor of `num_steps`, calling `each(result)` after every step and
    a checkpoint closure saving trainer.net to `directory`/c<step>.mdl; the steps it saved on."""
    saved = []

    @cstorch.checkpoint_closure
    def save(step):
        cstorch.save({"model": trainer.net.state_dict()}, str(directory / f"c{step}.mdl"))
        saved.append(step)

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=num_steps,
                                               checkpoint_steps=checkpoint_steps)
    for step, batch in enumerate(executor, start=1):
        result = step_fn(batch)
        if each is not None:
            each(result)
        save(step)
    return saved
