"""cstorch.optim.Adam and AdamW: torch.optim's updates (amsgrad too) as a static program, keeping
the real Cerebras classes' state and param-group names, so their checkpoints load into each other.

State, per parameter: `exp_avg`, `exp_avg_sq` (`max_exp_avg_sq` with amsgrad) and, with bias
correction, `beta1_power`/`beta2_power`: β^t for the coming step t (β at the start), float32,
multiplied by β in place after each step, as the real classes keep them. Beside them `step`, the
steps taken (float32, torch's name): the bias corrections 1 − β^t are computed from it in float64,
as torch computes them from its Python floats, so the update is torch's (float32 powers would move
it by up to 1e-4 relative within a few steps); every state tensor stays float32 (docs/cstorch/numerics.md).
A real state dict, which has no `step`, gives it back from the powers (`_steps_from_powers`). The
param group carries
the real classes' `l2_regularization_rate` (the gradient's L2 term): Adam's `weight_decay` is
recorded there and its `weight_decay` is 0.0, as the real Adam records it; AdamW's is 0.0 and its
`weight_decay` is decoupled. `load_state_dict` also reads torch.optim's Adam/AdamW state dicts
(a `step` becomes the β powers, an Adam's weight_decay its l2_regularization_rate), as the real
classes do. The learning rate may be a scheduler's tensor."""

import math

import torch
from torch.optim.optimizer import ParamsT

from ..backend.device import storage_device
from ..checks import betas_pair, number
from .optimizer import Optimizer, closure_loss
from .update import decoupled_decay, descend, with_gradients, with_l2, zeros


class _AdamBase(Optimizer):
    decoupled = False  # AdamW: weight decay shrinks the weights instead of adding to the gradient

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 correct_bias=True):
        owner = type(self).__name__
        decay = number(owner, "weight_decay", weight_decay)
        l2, decay = (0.0, decay) if self.decoupled else (decay, 0.0)
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas),
                        eps=number(owner, "eps", eps), weight_decay=decay, l2_regularization_rate=l2,
                        correct_bias=bool(correct_bias), amsgrad=bool(amsgrad))
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = zeros(p)
                self.state[p]["exp_avg_sq"] = zeros(p)
                if group["amsgrad"]:
                    self.state[p]["max_exp_avg_sq"] = zeros(p)
                if group["correct_bias"]:
                    for name, beta in zip(("beta1_power", "beta2_power"), group["betas"]):
                        self.state[p][name] = torch.tensor(beta, dtype=torch.float32, device=storage_device(p))

    def state_names_to_sparsify(self) -> list[str]:
        names = ["exp_avg", "exp_avg_sq"]
        return names + ["max_exp_avg_sq"] if any(group["amsgrad"] for group in self.param_groups) else names

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, decay, l2 = group["lr"], group["weight_decay"], group["l2_regularization_rate"]
            for p in with_gradients(group["params"]):
                grad, state = p.grad, self.state[p]
                step = self.increment_global_step(p).double()
                grad = with_l2(grad, p, l2)  # torch.optim.Adam's weight_decay
                decoupled_decay(p, lr, decay)  # torch.optim.AdamW's
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if group["amsgrad"]:
                    torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                    exp_avg_sq = state["max_exp_avg_sq"]
                if group["correct_bias"]:
                    bias_correction1 = 1 - torch.pow(beta1, step)
                    bias_correction2_sqrt = (1 - torch.pow(beta2, step)).sqrt()
                    state["beta1_power"].mul_(beta1)  # β^(t+1), for the next step, as the real classes keep it
                    state["beta2_power"].mul_(beta2)
                else:  # AdamW(correct_bias=False): BERT's Adam, no bias correction
                    bias_correction1 = bias_correction2_sqrt = torch.ones_like(step)
                # In place in one temporary (each a new tensor the size of p otherwise): the same numbers.
                denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt.to(p.dtype)).add_(group["eps"])
                step_size = (lr / bias_correction1).to(p.dtype)
                descend(p, torch.div(exp_avg, denom, out=denom), step_size, scratch=True)
        return loss

    def load_state_dict(self, state_dict: dict) -> None:
        """The real classes' state dicts, ours, and torch.optim's Adam/AdamW (see the module docstring)."""
        if isinstance(state_dict, dict) and {"state", "param_groups"} <= set(state_dict):
            state_dict = _with_steps(_from_torch(state_dict, self.decoupled))
        super().load_state_dict(state_dict)


def _from_torch(state_dict: dict, decoupled: bool) -> dict:
    """torch.optim's layout in the real classes' names: a parameter's `step` t becomes β^(t+1), the
    powers for its next step; a group without l2_regularization_rate gets one (an Adam's
    weight_decay, moved there)."""
    groups = []
    for group in state_dict["param_groups"]:
        group = dict(group)
        if "l2_regularization_rate" not in group:
            decay = group.get("weight_decay", 0.0)
            group["l2_regularization_rate"], group["weight_decay"] = (0.0, decay) if decoupled else (decay, 0.0)
        groups.append(group)
    state = {}
    for index, entries in state_dict["state"].items():
        entries = dict(entries)
        if "step" in entries and "beta1_power" not in entries:
            step = float(entries.pop("step"))
            group = next((g for g in groups if index in g.get("params", ())), None)
            if group is not None and group.get("correct_bias", True):
                beta1, beta2 = group["betas"]
                entries["beta1_power"] = torch.tensor(beta1 ** (step + 1), dtype=torch.float32)
                entries["beta2_power"] = torch.tensor(beta2 ** (step + 1), dtype=torch.float32)
            entries["step"] = torch.tensor(step, dtype=torch.float32)
        state[index] = entries
    return {**state_dict, "state": state, "param_groups": groups}


def _with_steps(state_dict: dict) -> dict:
    """A real class's state dict (β powers, no `step`) with the steps they stand for added."""
    state = {}
    for index, entries in state_dict["state"].items():
        entries = dict(entries)
        if "step" not in entries and "beta1_power" in entries:
            group = next((g for g in state_dict["param_groups"] if index in g.get("params", ())), None)
            if group is not None:
                entries["step"] = torch.tensor(_steps_from_powers(entries, group["betas"]), dtype=torch.float32)
        state[index] = entries
    return {**state_dict, "state": state}


def _steps_from_powers(entries: dict, betas) -> float:
    """t from the powers β^(t+1) of the coming step: by β1's (0.9^t is exact enough to round to t,
    about 1e-7 relative error a step against 0.105 between steps) while it is a normal float32, else
    by β2's (0.999^t: 1e-3 between steps, so exact to some thousands of steps)."""
    power1, power2 = float(entries["beta1_power"]), float(entries.get("beta2_power", 0.0))
    beta1, beta2 = (float(b) for b in betas)
    if power1 > 1e-30 and 0 < beta1 < 1:
        return float(max(round(math.log(power1) / math.log(beta1)) - 1, 0))
    if power2 > 0 and 0 < beta2 < 1:
        return float(max(round(math.log(power2) / math.log(beta2)) - 1, 0))
    return 0.0


class Adam(_AdamBase):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
    torch.optim.Adam's numbers (L2 weight decay added to the gradient)."""


class AdamW(_AdamBase):
    """AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False,
    correct_bias=True): torch.optim.AdamW's numbers (decoupled weight decay); the Cerebras
    AdamW's `correct_bias=False` leaves out the bias corrections (public 2.x scripts pass it)."""

    decoupled = True

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False,
                 correct_bias=True):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, correct_bias)
