"""A custom Cerebras optimizer, written as 004 says ("Defining a custom Cerebras optimizer"): a
subclass of cstorch.optim.Optimizer whose constructor takes arguments of its own, its state made
in preinitialize, its step in torch ops only.

AnchoredSGD is SGD with momentum that also pulls each weight back toward where it started
(L2-SP, the fine-tuning regularizer: the decay is toward the starting weights, not toward zero)
and caps each element's update at `max_update`.

    python -m csadmin.cstorch examples/cstorch/custom_optimizer.py --model-dir out --steps 30 --check

With --check the same training runs again in plain PyTorch (the same optimizer class, eagerly,
under float16 autocast, float32 weights) and the script prints how far the two final sets of
weights are apart: within a float16 epsilon (the step's half products accumulate in float32, as
the system's do; eager CPU float16 kernels round them differently: docs/cstorch.md's numerics
contract).
"""

import argparse
import os
import sys

import torch

try:  # the real API's name, under `python -m csadmin.cstorch`
    import cerebras_pytorch.experimental as cstorch
except ImportError:
    import csadmin.cstorch as cstorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import CLASSES, FEATURES, dataset  # noqa: E402


class AnchoredSGD(cstorch.optim.Optimizer):
    def __init__(self, params, lr, momentum=0.9, anchor_strength=0.0, max_update=None):
        if lr < 0.0 or momentum < 0.0 or anchor_strength < 0.0:
            raise ValueError(f"lr, momentum and anchor_strength must be non-negative: "
                             f"{lr}, {momentum}, {anchor_strength}")
        if max_update is not None and max_update <= 0.0:
            raise ValueError(f"max_update must be positive: {max_update}")
        defaults = dict(lr=lr, momentum=momentum, anchor_strength=anchor_strength, max_update=max_update)
        super().__init__(params, defaults)

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p] = {
                    "momentum_buffer": torch.zeros_like(p),
                    "anchor": p.detach().clone(),  # where the weight started
                }

    def state_names_to_sparsify(self):
        return ["momentum_buffer"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                grad = p.grad.add(p - state["anchor"], alpha=group["anchor_strength"])
                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(grad)
                update = buf * group["lr"]
                if group["max_update"] is not None:
                    update = update.clamp(-group["max_update"], group["max_update"])
                p.sub_(update)
        return loss


def build_model():
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.Tanh(), torch.nn.Linear(32, CLASSES))


def input_fn(batch_size, samples=640):
    inputs, labels = dataset(samples, seed=3)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels), batch_size=batch_size,
                                       drop_last=True)


def make_optimizer(model):
    return AnchoredSGD(model.parameters(), lr=0.05, momentum=0.9, anchor_strength=0.01, max_update=0.02)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", default="model_dir")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--check", action="store_true", help="train the same model in plain PyTorch and compare")
    args = p.parse_args()

    cstorch.configure(model_dir=args.model_dir, compile_dir=os.path.join(args.model_dir, "compile"),
                      checkpoint_steps=args.steps)
    torch.manual_seed(11)
    model = build_model()
    start = {name: t.clone() for name, t in model.state_dict().items()}
    compiled_model = cstorch.compile(model, backend="WSE_WS")
    optimizer = make_optimizer(model)
    loss_fn = torch.nn.CrossEntropyLoss()

    @cstorch.compile_step
    def training_step(inputs, labels):
        loss = loss_fn(compiled_model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    @cstorch.step_closure
    def log(step, loss):
        if step == 1 or step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)

    @cstorch.step_closure
    def save(step):
        cstorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "global_step": step},
                     os.path.join(args.model_dir, f"checkpoint_{step}.mdl"))

    dataloader = cstorch.utils.data.DataLoader(input_fn, 32, num_steps=args.steps)
    for step, (inputs, labels) in enumerate(dataloader, 1):
        loss = training_step(inputs, labels)
        log(step, loss)
    save(args.steps)
    trained = cstorch.load(os.path.join(args.model_dir, f"checkpoint_{args.steps}.mdl"))

    if args.check:  # the same steps in plain PyTorch: the same optimizer class, eagerly
        plain = build_model()
        plain.load_state_dict(start)
        plain_optimizer = make_optimizer(plain)
        batches = iter(())
        for _ in range(args.steps):
            batch = next(batches, None)
            if batch is None:
                batches = iter(input_fn(32))
                batch = next(batches)
            with torch.autocast("cpu", dtype=torch.float16):  # what the system's step computes in
                loss = loss_fn(plain(batch[0]), batch[1])
                plain_optimizer.zero_grad()
                loss.backward()
                plain_optimizer.step()
        apart = max((plain.state_dict()[name] - t).abs().max().item() for name, t in trained["model"].items())
        print(f"plain PyTorch's weights differ by at most {apart}")


if __name__ == "__main__":
    main()
