"""004's "Full Example (Training)", made concrete: a small classifier that learns in seconds.

    python -m csadmin.cstorch examples/cstorch/train.py --model-dir out      # as the real API's
    python examples/cstorch/train.py --model-dir out                         # or directly

csd comes from $CS_CONNECT / $CS_KEY (or --mgmt-address / --key); the system must be ACTIVE in
weight streaming. Checkpoints go to <model-dir>/checkpoint_<step>.mdl on the checkpoint steps
(and the last); `--checkpoint FILE` resumes from one, to the same weights an uninterrupted run
reaches. performance.json lands in <model-dir>/performance/, with the compile directory's link,
the run's yaml (train/params_train.yaml) and the TensorBoard event files.

Mixed precision is automatic, as on the system (001): the weights stay float32 and the step
computes in float16 (`cstorch.amp.use_bfloat16(True)` before the first step for bfloat16); with
`--loss-scale dynamic` a GradScaler keeps small float16 gradients from underflowing.

    --workers 4        four input worker processes, each with its shard of the data (csd's
                       `cs runs show` lists what each fed)
    --compile-only / --validate-only   stop after compiling / checking the step (nothing runs)
"""

import argparse
import os
import sys

import torch

try:  # under `python -m csadmin.cstorch` the real API's name is there
    import cerebras_pytorch.experimental as cstorch
except ImportError:
    import csadmin.cstorch as cstorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import build_model, input_fn  # noqa: E402

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--model-dir", default="model_dir")
p.add_argument("--compile-dir", help="default: <model-dir>/compile")
p.add_argument("--mgmt-address", help="csd's connection file or endpoint (default: $CS_CONNECT)")
p.add_argument("--key", help="your secret key file (default: $CS_KEY)")
p.add_argument("--num-steps", type=int, default=60, help="the run's total steps (resumed runs included)")
p.add_argument("--max-steps", type=int, help="stop after this many steps of this process (e.g. to resume later)")
p.add_argument("--checkpoint-steps", type=int, default=20)
p.add_argument("--checkpoint", dest="checkpoint_path", help="resume from this checkpoint")
p.add_argument("--loss-scale", default="0", help="0 (no gradient scaling), 'dynamic' or a static scale")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--workers", type=int, default=1, help="input worker processes (num_workers_per_csx)")
only = p.add_mutually_exclusive_group()
only.add_argument("--compile-only", action="store_true", help="compile and write the artifacts; run nothing")
only.add_argument("--validate-only", action="store_true", help="check the step against the system; compile nothing")
args = p.parse_args()
loss_scale = args.loss_scale if args.loss_scale == "dynamic" else float(args.loss_scale)

# Needs to be run at the beginning before model initialization
checkpoint_steps = args.checkpoint_steps
cstorch.configure(
    model_dir=args.model_dir,
    compile_dir=args.compile_dir or os.path.join(args.model_dir, "compile"),
    checkpoint_steps=checkpoint_steps,
    num_workers_per_csx=args.workers,
    compile_only=args.compile_only,
    validate_only=args.validate_only,
    **{k: v for k, v in (("mgmt_address", args.mgmt_address), ("key", args.key)) if v},
)

model = build_model()
compiled_model = cstorch.compile(model, backend="wse_ws")

loss_fn = torch.nn.CrossEntropyLoss()

optimizer = cstorch.optim.configure_optimizer(
    optimizer_type="SGD", params=model.parameters(), lr=0.05, momentum=0.9,
)
lr_scheduler = cstorch.optim.configure_lr_scheduler(
    optimizer,
    learning_rate=[
        {"scheduler": "LinearLR", "initial_learning_rate": 0.01, "end_learning_rate": 0.05, "total_iters": 10},
        {"scheduler": "CosineDecayLR", "initial_learning_rate": 0.05, "end_learning_rate": 0.005,
         "total_iters": max(1, args.num_steps - 10)},
    ],
)

grad_scaler = None
if loss_scale != 0.0:
    grad_scaler = cstorch.amp.GradScaler(loss_scale=loss_scale, init_scale=2.0**15 if loss_scale == "dynamic" else None,
                                         steps_per_increase=100 if loss_scale == "dynamic" else None)


@cstorch.step_closure
def save_checkpoint(step):
    checkpoint_file = os.path.join(args.model_dir, f"checkpoint_{step}.mdl")

    state_dict = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
    }
    if lr_scheduler:
        state_dict["lr_scheduler"] = lr_scheduler.state_dict()
    if grad_scaler:
        state_dict["grad_scaler"] = grad_scaler.state_dict()

    state_dict["global_step"] = step

    cstorch.save(state_dict, checkpoint_file)
    print(f"saved {checkpoint_file}", flush=True)


global_step = 0

# Load checkpoint if provided
if args.checkpoint_path is not None:
    state_dict = cstorch.load(args.checkpoint_path)

    model.load_state_dict(state_dict["model"])
    optimizer.load_state_dict(state_dict["optimizer"])
    if lr_scheduler:
        lr_scheduler.load_state_dict(state_dict["lr_scheduler"])
    if grad_scaler:
        grad_scaler.load_state_dict(state_dict["grad_scaler"])

    global_step = state_dict.get("global_step", 0)
    print(f"resumed from {args.checkpoint_path} at step {global_step}", flush=True)

dataloader = cstorch.utils.data.DataLoader(
    input_fn,
    num_steps=args.num_steps - global_step,
    max_steps=args.max_steps,
    batch_size=args.batch_size,
    start=global_step,  # passed on to input_fn: the batches an uninterrupted run would see next
)


@cstorch.compile_step
def training_step(batch):
    inputs, targets = batch
    outputs = compiled_model(inputs)
    loss = loss_fn(outputs, targets)

    cstorch.amp.optimizer_step(
        loss, optimizer, grad_scaler, max_gradient_norm=1.0
    )
    lr_scheduler.step()

    return loss


@cstorch.step_closure
def post_training_step(step: int, loss: torch.Tensor):
    if step % 10 == 0 or step == 1:
        print(f"step {step} loss {loss.item():.4f}", flush=True)


last_step = global_step + len(dataloader)
for i, batch in enumerate(dataloader):
    loss = training_step(batch)

    step = global_step + i + 1
    post_training_step(step, loss)

    # Can only save checkpoint on predetermined steps (and the last)
    if step % checkpoint_steps == 0 or step == last_step:
        save_checkpoint(step)

if not (args.compile_only or args.validate_only):
    print(f"performance: {os.path.join(args.model_dir, 'performance', 'performance.json')}")
