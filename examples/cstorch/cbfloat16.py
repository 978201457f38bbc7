"""002's advice, shown: "use cbfloat16 … dynamic loss scaling is not necessary on many networks".

    python examples/cstorch/cbfloat16.py --half float16                      # gradients underflow: it stalls
    python examples/cstorch/cbfloat16.py --half float16 --loss-scale dynamic # the scaler rescues it
    python examples/cstorch/cbfloat16.py --half cbfloat16                    # trains, no scaler

A student linear layer (64 → 512) learns a teacher's small outputs (0.001 × its own) by mean
squared error over a batch of 256: 131,072 outputs, so the gradient that reaches the half-precision
output is 2 · residual / 131,072. Below a residual of about 0.004 that is under half of float16's
smallest subnormal (2^-24 ≈ 6e-8) and rounds to zero; CB16's smallest is 2^-39 ≈ 1.8e-12 (its
smallest normal 2^-30). So in float16 without loss scaling the weight gradients go to zero entry
by entry and the loss stops falling, while in cbfloat16 it keeps falling, as float16 does with
`--loss-scale dynamic`. Every 10 steps (and at the end) it prints the loss and the fraction of
the weight gradient's entries that are exactly zero:

    step 80 loss 3.43e-07 zero_grads 0.84          float16: 84 % of the gradient underflowed
    step 120 loss 2.51e-07 zero_grads 0.97         … and the loss has all but stopped
    step 80 loss 1.51e-08 zero_grads 0.00          cbfloat16
    step 120 loss 8.22e-10 zero_grads 0.00         … still halving every 10 steps

csd comes from $CS_CONNECT / $CS_KEY (or --mgmt-address / --key), in weight streaming and ACTIVE.
"""

import argparse
import os

import torch

try:  # under `python -m csadmin.cstorch` the real API's name is there
    import cerebras_pytorch.experimental as cstorch
except ImportError:
    import csadmin.cstorch as cstorch

p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
p.add_argument("--half", choices=("float16", "bfloat16", "cbfloat16"), default="cbfloat16")
p.add_argument("--loss-scale", default="0", help="0 (no gradient scaling), 'dynamic' or a static scale")
p.add_argument("--num-steps", type=int, default=120)
p.add_argument("--model-dir", default="model_dir")
p.add_argument("--mgmt-address", help="csd's connection file or endpoint (default: $CS_CONNECT)")
p.add_argument("--key", help="your secret key file (default: $CS_KEY)")
args = p.parse_args()
loss_scale = args.loss_scale if args.loss_scale == "dynamic" else float(args.loss_scale)

cstorch.configure(model_dir=args.model_dir, compile_dir=os.path.join(args.model_dir, "compile"),
                  **{k: v for k, v in (("mgmt_address", args.mgmt_address), ("key", args.key)) if v})
cstorch.amp.set_half_dtype(args.half)  # before the first step: the program is compiled in it

torch.manual_seed(0)
teacher = torch.nn.Linear(64, 512)
student = torch.nn.Linear(64, 512)
with torch.no_grad():  # a student that starts close: its residuals are small from the start
    student.weight.mul_(0.01)
    student.bias.mul_(0.01)
compiled = cstorch.compile(student, backend="wse_ws")
optimizer = cstorch.optim.Adam(student.parameters(), lr=3e-4)
grad_scaler = cstorch.amp.GradScaler(loss_scale=loss_scale) if loss_scale else None


steps_done = 0


@cstorch.step_closure
def report(loss, zero_grads):
    global steps_done
    steps_done += 1
    if steps_done % 10 == 0 or steps_done == args.num_steps:
        print(f"step {steps_done} loss {loss.item():.3g} zero_grads {zero_grads.item():.2f}", flush=True)


@cstorch.compile_step
def training_step(x, targets):
    loss = torch.nn.functional.mse_loss(compiled(x).float(), targets)
    cstorch.amp.optimizer_step(loss, optimizer, grad_scaler)
    zero_grads = (student.weight.grad == 0).float().mean()  # underflowed entries (and exact zeros)
    report(loss, zero_grads)
    return loss


def batches(num_steps: int):
    g = torch.Generator().manual_seed(1)
    for _ in range(num_steps):
        x = torch.randn(256, 64, generator=g)
        yield x, teacher(x).detach() * 0.001


for x, targets in batches(args.num_steps):
    training_step(x, targets)
