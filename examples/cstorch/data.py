"""The examples' synthetic task: four Gaussian clusters in 16 dimensions, the label is the
cluster. Deterministic (seeded), so a run resumed from a checkpoint sees the same batches an
uninterrupted run would have: `input_fn(start=k)` begins at batch k of the same cycle. With
input workers (`--workers N`), worker k of N takes every N-th sample from the k-th on (its shard,
disjoint from the others'), from `cstorch.utils.data.worker_info()`."""

from __future__ import annotations

import torch

from csadmin.cstorch.utils.data import worker_info

FEATURES, CLASSES = 16, 4  # clusters that overlap: accuracy well below 1


def dataset(samples: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(CLASSES, FEATURES, generator=torch.Generator().manual_seed(1234)) * 0.6
    labels = torch.randint(0, CLASSES, (samples,), generator=g)
    inputs = centres[labels] + torch.randn(samples, FEATURES, generator=g)
    return inputs, labels


def input_fn(batch_size: int = 32, samples: int = 1024, seed: int = 0, start: int = 0):
    """A torch DataLoader of fixed-size batches (drop_last=True: the fabric runs one batch
    shape), rotated to begin at batch `start`."""
    inputs, labels = dataset(samples, seed)
    shard = worker_info()  # (0, 1) in the training process itself
    inputs, labels = inputs[shard.task_id::shard.num_tasks], labels[shard.task_id::shard.num_tasks]
    samples = len(labels)
    shift = (start * batch_size) % (samples - samples % batch_size)
    inputs, labels = inputs.roll(-shift, 0), labels.roll(-shift, 0)
    data = torch.utils.data.TensorDataset(inputs, labels)
    return torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=False, drop_last=True)


def build_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 64), torch.nn.ReLU(), torch.nn.Linear(64, CLASSES))


def plain_accuracy(weights: dict, batch_size: int, num_steps: int, half: bool) -> float:
    """The evaluation examples' check, without cstorch: the accuracy of `weights` on the held-out
    batches (seed 1) in plain PyTorch, in float16 compute as the system computes (`half`) or not."""
    plain = build_model()
    plain.load_state_dict(weights)
    plain.eval()
    correct = seen = 0
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16, enabled=half):
        for step, (inputs, targets) in enumerate(input_fn(batch_size=batch_size, seed=1)):
            if step == num_steps:
                break
            correct += (plain(inputs).argmax(-1) == targets).sum().item()
            seen += len(targets)
    return correct / seen
