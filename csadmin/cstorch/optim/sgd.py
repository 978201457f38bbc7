"""cstorch.optim.SGD: torch.optim.SGD's update (momentum, dampening, nesterov, weight_decay) as a
static program: the momentum buffer is made (zero) in preinitialize and updated in place. torch's
"the first step copies the gradient into the buffer" needs nothing without dampening (0·m + g = g)
and, with dampening, is a torch.where on the global step choosing the gradient's coefficient;
so the state is torch's (`momentum_buffer`), plus `step` only with dampening."""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

from .checks import number
from .optimizer import Optimizer, closure_loss


class SGD(Optimizer):
    """SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False), the same
    numbers as torch.optim.SGD."""

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        owner = "SGD"
        defaults = dict(lr=number(owner, "lr", lr), momentum=number(owner, "momentum", momentum),
                        dampening=number(owner, "dampening", dampening),
                        weight_decay=number(owner, "weight_decay", weight_decay), nesterov=bool(nesterov))
        if nesterov and (defaults["momentum"] <= 0 or defaults["dampening"] != 0):
            raise InvalidArgument("SGD: Nesterov momentum requires a momentum and zero dampening.")
        super().__init__(params, defaults, enable_global_step=defaults["momentum"] != 0 and defaults["dampening"] != 0)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            if group["momentum"] != 0:
                for p in group["params"]:
                    self.state[p]["momentum_buffer"] = torch.zeros_like(p, memory_format=torch.preserve_format)

    def state_names_to_sparsify(self) -> list[str]:
        return ["momentum_buffer"] if any(group["momentum"] != 0 for group in self.param_groups) else []

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            momentum, dampening, decay = group["momentum"], group["dampening"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:  # static: which parameters get a gradient never changes
                    continue
                d_p = p.grad if decay == 0 else p.grad.add(p, alpha=decay)
                if momentum != 0:
                    buf = self.state[p]["momentum_buffer"]
                    if dampening == 0:  # the buffer starts at 0, so torch's first step (buf = d_p) is this
                        buf.mul_(momentum).add_(d_p)
                    else:  # torch's first step takes the gradient undamped: a tensor choice of coefficient
                        first = self.increment_global_step(p) == 1
                        buf.mul_(momentum).add_(d_p * torch.where(first, 1.0, 1.0 - dampening))
                    d_p = d_p.add(buf, alpha=momentum) if group["nesterov"] else buf
                descend(p, d_p, group["lr"])
        return loss


def descend(p: torch.Tensor, update: torch.Tensor, lr, scratch: bool = False) -> None:
    """p -= lr * update, with lr a number or (scheduled) a 0-d tensor. `scratch`: `update` is the
    caller's own temporary, so lr * update may be formed in it (the same numbers, no new tensor)."""
    if isinstance(lr, torch.Tensor):
        p.sub_(update.mul_(lr) if scratch else update * lr)
    else:
        p.add_(update, alpha=-lr)
