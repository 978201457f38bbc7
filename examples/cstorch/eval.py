"""004's "Full Example (Evaluation)", made concrete: the accuracy of a checkpoint of train.py.

    python -m csadmin.cstorch examples/cstorch/eval.py --checkpoint out/checkpoint_60.mdl

Prints the accuracy cstorch's AccuracyMetric computed on the system and, with --check, the same
model's accuracy computed in plain PyTorch on the same batches with the system's numerics (they
are equal): the system computes in float16 with float32 weights (001), so the plain run is under
`torch.autocast("cpu", dtype=torch.float16)`, the casts the runtime inserts in every step.
"""

import argparse
import os
import sys

import torch

try:  # under `python -m csadmin.cstorch` the real API's name is there
    import cerebras_pytorch.experimental as cstorch
    import cerebras_pytorch.experimental.metrics as metrics
except ImportError:
    import csadmin.cstorch as cstorch
    import csadmin.cstorch.metrics as metrics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import build_model, input_fn, plain_accuracy  # noqa: E402

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--checkpoint", required=True)
p.add_argument("--model-dir", default="eval_dir")
p.add_argument("--mgmt-address", help="csd's connection file or endpoint (default: $CS_CONNECT)")
p.add_argument("--key", help="your secret key file (default: $CS_KEY)")
p.add_argument("--num-steps", type=int, default=16)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--check", action="store_true", help="also compute the accuracy in plain PyTorch")
args = p.parse_args()

cstorch.configure(
    model_dir=args.model_dir, compile_dir=os.path.join(args.model_dir, "compile"),
    **{k: v for k, v in (("mgmt_address", args.mgmt_address), ("key", args.key)) if v},
)

model = build_model()
compiled_model = cstorch.compile(model, backend="wse_ws")
compiled_model.eval()

loss_fn = torch.nn.CrossEntropyLoss()

accuracy = metrics.AccuracyMetric("accuracy", compute_on_system=True)

state_dict = cstorch.load(args.checkpoint)
model.load_state_dict(state_dict["model"])

# held-out data: another seed than training's
dataloader = cstorch.utils.data.DataLoader(input_fn, num_steps=args.num_steps, batch_size=args.batch_size, seed=1)


@cstorch.compile_step
def evaluation_step(batch):
    inputs, targets = batch
    outputs = compiled_model(inputs)
    loss = loss_fn(outputs, targets)

    accuracy(
        labels=targets.clone(),
        predictions=outputs.argmax(-1).int(),
    )

    return loss


total_loss = 0
total_steps = 0


@cstorch.step_closure
def post_eval_step(loss: torch.Tensor):
    global total_loss, total_steps

    total_loss += loss.item()
    total_steps += 1


with torch.no_grad():
    for batch in dataloader:
        loss = evaluation_step(batch)

        post_eval_step(loss)

print(f"Eval Loss: {total_loss / total_steps:.6f}")
print(f"Eval Accuracy: {float(accuracy)}")

if args.check:  # the same weights and batches in plain PyTorch, without cstorch, with the system's numerics
    plain = plain_accuracy(state_dict["model"], args.batch_size, args.num_steps, half=True)
    print(f"Plain PyTorch Accuracy: {plain}")
