"""An evaluation script written for the later releases' API (`import cerebras.pytorch as cstorch`):
the accuracy of a checkpoint of train_v2.py, computed on the system.

    python -m csadmin.cstorch examples/cstorch/eval_v2.py --checkpoint out/checkpoint_60.mdl --check

Prints the accuracy cstorch's AccuracyMetric computed in one DataExecutor's run and, with --check,
the same model's accuracy in plain PyTorch on the same batches with the backend's numerics (on
the system: float16 compute with float32 weights, 001, so the plain run is under
`torch.autocast("cpu", dtype=torch.float16)`; the CPU backend computes in float32): they are equal.
"""

import argparse
import os
import sys

import torch

try:  # under `python -m csadmin.cstorch` the real package's name is there
    import cerebras.pytorch as cstorch
except ImportError:
    import csadmin.cstorch as cstorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import build_model, input_fn, plain_accuracy  # noqa: E402

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--checkpoint", required=True)
p.add_argument("--out-dir", default="eval_out")
p.add_argument("--backend", default="CSX", choices=["CSX", "CPU"])
p.add_argument("--num-steps", type=int, default=16)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--check", action="store_true", help="also compute the accuracy in plain PyTorch")
args = p.parse_args()

backend = cstorch.backend(args.backend, artifact_dir=args.out_dir)
with backend.device:
    model = build_model()
compiled_model = cstorch.compile(model, backend)
compiled_model.eval()

state_dict = cstorch.load(args.checkpoint)
model.load_state_dict(state_dict["model"])

accuracy = cstorch.metrics.AccuracyMetric("accuracy")


@cstorch.trace
def eval_step(batch):
    inputs, targets = batch
    outputs = compiled_model(inputs)
    accuracy(labels=targets.clone(), predictions=outputs.argmax(-1).int())
    return outputs


dataloader = cstorch.utils.data.DataLoader(input_fn, batch_size=args.batch_size, seed=1)  # held out
executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=args.num_steps)
with torch.no_grad():
    for batch in executor:
        eval_step(batch)
print(f"Eval Accuracy: {float(accuracy)}")

if args.check:  # the same weights and batches without cstorch, with the backend's numerics
    plain = plain_accuracy(state_dict["model"], args.batch_size, args.num_steps, half=backend.is_csx)
    print(f"Plain PyTorch Accuracy: {plain}")
