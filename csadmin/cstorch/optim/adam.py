"""cstorch.optim.Adam and AdamW: torch.optim's updates (amsgrad too) as a static program. The
global step is a tensor, so the bias corrections are tensor functions of it (computed in float64,
as torch computes them in Python floats), and the learning rate may be a scheduler's tensor."""

from __future__ import annotations

import torch

from ..checks import betas_pair, number
from .optimizer import Optimizer, closure_loss
from .update import descend, with_gradients, zeros


class _AdamBase(Optimizer):
    decoupled = False  # AdamW: weight decay shrinks the weights instead of adding to the gradient

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
                 correct_bias=True):
        owner = type(self).__name__
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas),
                        eps=number(owner, "eps", eps), weight_decay=number(owner, "weight_decay", weight_decay),
                        amsgrad=bool(amsgrad), correct_bias=bool(correct_bias))
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = zeros(p)
                self.state[p]["exp_avg_sq"] = zeros(p)
                if group["amsgrad"]:
                    self.state[p]["max_exp_avg_sq"] = zeros(p)

    def state_names_to_sparsify(self) -> list[str]:
        names = ["exp_avg", "exp_avg_sq"]
        return names + ["max_exp_avg_sq"] if any(group["amsgrad"] for group in self.param_groups) else names

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, decay = group["lr"], group["weight_decay"]
            for p in with_gradients(group["params"]):
                grad, state = p.grad, self.state[p]
                step = self.increment_global_step(p).double()
                if decay != 0:
                    if self.decoupled:
                        p.mul_(1 - lr * decay)
                    else:
                        grad = grad.add(p, alpha=decay)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                if group["amsgrad"]:
                    torch.maximum(state["max_exp_avg_sq"], exp_avg_sq, out=state["max_exp_avg_sq"])
                    exp_avg_sq = state["max_exp_avg_sq"]
                bias_correction1 = 1 - torch.pow(beta1, step)
                bias_correction2_sqrt = (1 - torch.pow(beta2, step)).sqrt()
                if not group["correct_bias"]:  # AdamW(correct_bias=False): BERT's Adam, no bias correction
                    bias_correction1, bias_correction2_sqrt = torch.ones_like(step), torch.ones_like(step)
                # In place in one temporary (each a new tensor the size of p otherwise): the same numbers.
                denom = exp_avg_sq.sqrt().div_(bias_correction2_sqrt.to(p.dtype)).add_(group["eps"])
                step_size = (lr / bias_correction1).to(p.dtype)
                descend(p, torch.div(exp_avg, denom, out=denom), step_size, scratch=True)
        return loss


class Adam(_AdamBase):
    """Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False):
    torch.optim.Adam's numbers (L2 weight decay added to the gradient)."""


class AdamW(_AdamBase):
    """AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False,
    correct_bias=True): torch.optim.AdamW's numbers (decoupled weight decay); the Cerebras
    AdamW's `correct_bias=False` leaves out the bias corrections (public 2.x scripts pass it)."""

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01, amsgrad=False,
                 correct_bias=True):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, correct_bias)
