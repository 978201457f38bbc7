"""A cstorch training script whose input workers shard by their index, for csrun_wse's tests with
workers on other nodes: worker i of N yields samples i, i+N, i+2N, … (each sample's id in feature
0), and the training process writes the ids its steps ran on to <model-dir>/fed.json, so a test
sees that every worker knew its index. `--raise-in I` makes worker I's input function raise after
8 batches (the run open by then); `--kill-in I` makes worker I kill itself (SIGKILL) there;
`--exit-in-task P` makes Slurm task P exit with status 5 at once, before its DataLoader."""

import argparse
import json
import os
import signal

import torch

import cerebras_pytorch.experimental as cstorch
from tests.launch.script_step import training_step

p = argparse.ArgumentParser()
p.add_argument("--model-dir", required=True)
p.add_argument("--num-steps", type=int, default=24)
p.add_argument("--batch-size", type=int, default=4)
p.add_argument("--raise-in", type=int)
p.add_argument("--kill-in", type=int)
p.add_argument("--exit-in-task", type=int, help="this Slurm task exits with status 5 before its DataLoader")
args = p.parse_args()
if args.exit_in_task is not None and os.environ.get("SLURM_PROCID") == str(args.exit_in_task):
    raise SystemExit(5)

cstorch.configure(model_dir=args.model_dir, compile_dir=os.path.join(args.model_dir, "compile"))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
compiled = cstorch.compile(model, backend="wse_ws")
optimizer = cstorch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()


def shard(batch_size, raise_in, kill_in):
    info = cstorch.utils.data.worker_info()
    k = 0
    while True:
        if k == 8 and info.task_id == raise_in:  # batch 8 goes out once 4 were taken: the run is open
            raise RuntimeError(f"shard {info.task_id} is unreadable")
        if k == 8 and info.task_id == kill_in:
            os.kill(os.getpid(), signal.SIGKILL)
        ids = torch.arange(k * batch_size, (k + 1) * batch_size) * info.num_tasks + info.task_id
        x = torch.randn(batch_size, 8)
        x[:, 0] = ids.float()
        yield x, (x[:, 1] > 0).long()
        k += 1


class Shard:
    def __init__(self, *a):
        self.a = a

    def __iter__(self):
        return shard(*self.a)


loader = cstorch.utils.data.DataLoader(Shard, args.batch_size, args.raise_in, args.kill_in, num_steps=args.num_steps)


step = training_step(compiled, loss_fn, optimizer)


fed = []
for batch in loader:
    fed += batch[0][:, 0].long().tolist()
    step(batch)
with open(os.path.join(args.model_dir, "fed.json"), "w") as f:
    json.dump({"ids": fed, "workers": loader.num_workers or 1}, f)
print("done", flush=True)
