"""cstorch.optim.Lion and Rprop: the optimizers whose step follows the sign of a gradient, not
its size, as static programs (each sign a torch op, each choice a torch.where).

Rprop is torch.optim.Rprop's numbers with the real Cerebras class's constructor (lr=1e-3, torch's
1e-2). Lion has no torch.optim counterpart: it is the published algorithm (Chen et al. 2023,
"Symbolic Discovery of Optimization Algorithms") as the real class computes it.
"""

import torch
from torch.optim.optimizer import ParamsT

from ..checks import betas_pair, number, pair
from .optimizer import Optimizer, closure_loss
from .update import decoupled_decay, descend, gradient, with_gradients, zeros


class Lion(Optimizer):
    """Lion(params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0): decoupled weight decay
    (p ← p·(1 - lr·wd)), then p ← p - lr·sign(β1·m + (1 - β1)·g), then the momentum `exp_avg`
    m ← β2·m + (1 - β2)·g. lr and weight_decay must be at least 0, betas in [0, 1)."""

    def __init__(self, params: ParamsT, lr: float = 1e-4, betas=(0.9, 0.99), weight_decay=0.0):
        owner = "Lion"
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas),
                        weight_decay=number(owner, "weight_decay", weight_decay))
        super().__init__(params, defaults)

    def preinitialize(self) -> None:
        self.zero_state("exp_avg")

    def state_names_to_sparsify(self) -> list[str]:
        return ["exp_avg"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            lr, decay = group["lr"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in with_gradients(group["params"]):
                grad, exp_avg = gradient("Lion", p), self.state[p]["exp_avg"]
                decoupled_decay(p, lr, decay)
                direction = exp_avg.mul(beta1).add_(grad, alpha=1 - beta1).sign_()
                descend(p, direction, lr, scratch=True)
                exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
        return loss


class Rprop(Optimizer):
    """Rprop(params, lr=1e-3, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)): each coordinate keeps
    its own step size (`step_size`, starting at lr), multiplied by etas[1] while its gradient
    keeps its sign and by etas[0] when it flips (that step then skips the coordinate), clamped to
    step_sizes; the parameter moves by the step size against the gradient's sign. `prev` is the
    gradient of the step before. The real class checks only lr (at least 0); etas and step_sizes
    must be pairs of numbers. lr sets the initial step sizes only, as in torch: a scheduler's lr
    does not change them."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, etas=(0.5, 1.2), step_sizes=(1e-6, 50.0)):
        owner = "Rprop"
        defaults = dict(lr=number(owner, "lr", lr), etas=_pair(owner, "etas", etas, "etaminus, etaplus"),
                        step_sizes=_pair(owner, "step_sizes", step_sizes, "minimum, maximum"))
        super().__init__(params, defaults)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["prev"] = zeros(p)
                self.state[p]["step_size"] = torch.full_like(p, float(group["lr"]),
                                                             memory_format=torch.preserve_format)

    def state_names_to_sparsify(self) -> list[str]:
        return ["prev", "step_size"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            smallest, largest = group["step_sizes"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("Rprop", p), self.state[p]
                prev, step_size = state["prev"], state["step_size"]
                agreement = grad.mul(prev).sign()
                factor = torch.where(agreement > 0, etaplus, torch.where(agreement < 0, etaminus, 1.0))
                step_size.mul_(factor).clamp_(smallest, largest)
                # A flipped sign skips this step's move; p.grad itself is left as the backward made it.
                grad = torch.where(factor == etaminus, 0.0, grad)
                p.addcmul_(grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss


def _pair(owner: str, name: str, value, parts: str) -> tuple[float, float]:
    """A pair the real class takes unchecked: any two numbers."""
    return pair(owner, name, value, float("-inf"), parts=parts)
