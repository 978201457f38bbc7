"""cstorch.optim.Adamax, NAdam and RAdam: Adam's variants, as the real Cerebras classes compute
them, as static programs.

Their constructors are the real classes' (their defaults, which are not always torch's: Adamax's
lr is 1e-3 and eps 1e-6, RAdam's eps 1e-6; and the same values refused). The bias corrections
and the other functions of the step are tensors of the global step, computed in float64 as
torch computes them in Python floats, so they keep changing when the captured step replays.

NAdam is the real class's, which is torch.optim.NAdam's up to torch 1.12: its momentum term is
divided by 1 - μ_{t+1}·μ_t·Πμ (μ_t counted twice), where torch since 1.13 divides by
1 - μ_{t+1}·Πμ. The difference fades as Πμ falls to 0 (after some ten steps at the default
betas) and the gradient term is the same.
"""

import torch
from torch.optim.optimizer import ParamsT

from ..backend.device import storage_device
from ..checks import betas_pair, number, real
from .optimizer import Optimizer, closure_loss
from .update import descend, gradient, with_gradients, with_l2, zeros



class Adamax(Optimizer):
    """Adamax(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, maximize=False):
    Adam with the infinity norm: `exp_avg` the gradients' running average, `exp_inf` the running
    maximum of |g| + eps, and the bias correction from `beta1_power` (β1^t, a state tensor that
    each step multiplies by β1, as the real class keeps it, instead of a global step). lr and eps
    must be at least 0, betas in [0, 1); weight_decay is not checked (as the real class)."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, maximize=False):
        owner = "Adamax"
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas), eps=number(owner, "eps", eps),
                        weight_decay=real(owner, "weight_decay", weight_decay), maximize=bool(maximize))
        super().__init__(params, defaults)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = zeros(p)
                self.state[p]["exp_inf"] = zeros(p)
                self.state[p]["beta1_power"] = torch.tensor(group["betas"][0], device=storage_device(p))

    def state_names_to_sparsify(self) -> list[str]:
        return ["exp_avg", "exp_inf"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("Adamax", p, group["maximize"]), self.state[p]
                grad = with_l2(grad, p, group["weight_decay"])
                exp_avg, exp_inf, beta1_power = state["exp_avg"], state["exp_inf"], state["beta1_power"]
                exp_avg.lerp_(grad, 1 - beta1)
                torch.maximum(exp_inf.mul(beta2), grad.abs().add_(group["eps"]), out=exp_inf)
                update = torch.div(exp_avg, exp_inf).div_(1 - beta1_power)
                beta1_power.mul_(beta1)  # β1^(t+1), for the next step
                descend(p, update, group["lr"], scratch=True)
        return loss


class NAdam(Optimizer):
    """NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3):
    Adam with Nesterov momentum whose coefficient μ_t = β1·(1 - ½·0.96^(t·momentum_decay)) warms
    up; `mu_product` keeps Πμ. lr, eps, weight_decay and momentum_decay must be at least 0, betas
    in [0, 1). The momentum term's divisor is the real class's (the module's docstring)."""

    def __init__(self, params: ParamsT, lr: float = 2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3):
        owner = "NAdam"
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas), eps=number(owner, "eps", eps),
                        weight_decay=number(owner, "weight_decay", weight_decay),
                        momentum_decay=number(owner, "momentum_decay", momentum_decay))
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["mu_product"] = torch.tensor(1.0, device=storage_device(p))
                self.state[p]["exp_avg"] = zeros(p)
                self.state[p]["exp_avg_sq"] = zeros(p)

    def state_names_to_sparsify(self) -> list[str]:
        return ["exp_avg", "exp_avg_sq"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, decay, momentum_decay = group["lr"], group["weight_decay"], group["momentum_decay"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("NAdam", p), self.state[p]
                step = self.increment_global_step(p).double()
                grad = with_l2(grad, p, decay)
                mu = beta1 * (1 - 0.5 * torch.pow(0.96, step * momentum_decay))
                mu_next = beta1 * (1 - 0.5 * torch.pow(0.96, (step + 1) * momentum_decay))
                mu_product = state["mu_product"].mul_(mu)
                product = mu_product.double()
                product_next = product * mu * mu_next  # the real class's divisor (module docstring)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div((1 - torch.pow(beta2, step)).to(p.dtype)).sqrt_().add_(group["eps"])
                grad_rate = (lr * (1 - mu) / (1 - product)).to(p.dtype)
                momentum_rate = (lr * mu_next / (1 - product_next)).to(p.dtype)
                p.sub_(torch.mul(grad, grad_rate).div_(denom))
                p.sub_(torch.mul(exp_avg, momentum_rate).div_(denom))
        return loss


class RAdam(Optimizer):
    """RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0): Adam whose adaptive
    step is rectified by the variance of its running average: while the approximated SMA length
    ρ_t is at most 5 the step is the bias-corrected momentum alone; after, it is scaled by
    r_t·√(1 - β2^t)/(√v + eps). A torch.where on ρ_t, not a Python if. lr, eps and weight_decay
    must be at least 0, betas in [0, 1)."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        owner = "RAdam"
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas), eps=number(owner, "eps", eps),
                        weight_decay=number(owner, "weight_decay", weight_decay))
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        self.zero_state("exp_avg", "exp_avg_sq")

    def state_names_to_sparsify(self) -> list[str]:
        return ["exp_avg", "exp_avg_sq"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            rho_inf = 2 / (1 - beta2) - 1
            for p in with_gradients(group["params"]):
                grad, state = gradient("RAdam", p), self.state[p]
                step = self.increment_global_step(p).double()
                grad = with_l2(grad, p, group["weight_decay"])
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                beta2_power = torch.pow(beta2, step)
                bias_correction2 = 1 - beta2_power
                rho_t = rho_inf - 2 * step * beta2_power / bias_correction2
                # Negative under the root while ρ_t < 4: the where below never picks it then.
                rect = torch.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                stepped = exp_avg.div((1 - torch.pow(beta1, step)).to(p.dtype)).mul_(group["lr"])
                adaptive = bias_correction2.sqrt().to(p.dtype) / exp_avg_sq.sqrt().add_(group["eps"])
                p.sub_(torch.where(rho_t > 5, stepped * adaptive * rect.to(p.dtype), stepped))
        return loss
