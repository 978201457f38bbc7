"""A training script whose input function is slow on purpose (it sleeps `--delay` seconds per
batch), for cs_input_analyzer's tests: a wide model, so that a step takes milliseconds and the
compiled program's estimate is within reach of a few sleeping workers."""

import argparse
import os
import time

import torch

import cerebras_pytorch.experimental as cstorch
from tests.launch.script_step import training_step

p = argparse.ArgumentParser()
p.add_argument("--model-dir", required=True)
p.add_argument("--compile-dir", help="default: <model-dir>/compile")
p.add_argument("--num-steps", type=int, default=20)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--delay", type=float, default=0.0)
p.add_argument("--batch-size", type=int, default=64)
args = p.parse_args()

cstorch.configure(model_dir=args.model_dir, compile_dir=args.compile_dir or os.path.join(args.model_dir, "compile"),
                  num_workers_per_csx=args.workers)
torch.manual_seed(0)
# One intra-op thread, in the training process too: the compiled estimate and every step then
# measure one core's share of this CPU. With a thread per core on a shared machine, a thread
# descheduled mid-matmul stalls its partner, and a step slows far more than the load grows.
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048),
                            torch.nn.ReLU(), torch.nn.Linear(2048, 2))
compiled = cstorch.compile(model, backend="wse_ws")
# bfloat16 for the step's half precision: this CPU has no float16 matrix kernels (PyTorch falls
# back to converting element by element: seconds a step, which no sleeping input could starve).
cstorch.amp.use_bfloat16(True)
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()


class SlowBatches:
    """Batches of a separable problem, each after `delay` seconds of (simulated) work."""

    def __init__(self, batch_size, delay):
        self.batch_size, self.delay = batch_size, delay
        self.g = torch.Generator().manual_seed(cstorch.utils.data.task_id())

    def __iter__(self):
        for _ in range(50):
            time.sleep(self.delay)  # the slow part: decoding, augmenting, reading a remote file ...
            x = torch.randn(self.batch_size, 512, generator=self.g)
            yield x, (x[:, 0] > 0).long()


def input_fn(batch_size, delay):
    return SlowBatches(batch_size, delay)


loader = cstorch.utils.data.DataLoader(input_fn, args.batch_size, args.delay, num_steps=args.num_steps)


step = training_step(compiled, loss_fn, optimizer)


for batch in loader:
    step(batch)
print("done", flush=True)
