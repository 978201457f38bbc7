"""cstorch.optim.SGD and ASGD, torch.optim's updates as static programs.

SGD (momentum, dampening, nesterov, weight_decay): the momentum buffer is made (zero) in
preinitialize and updated in place. torch's "the first step copies the gradient into the buffer"
needs nothing without dampening (0·m + g = g) and, with dampening, is a torch.where on the global
step choosing the gradient's coefficient; so the state is torch's and the real class's
(`momentum_buffer`), plus `step` only with dampening (the real class, which damps every step,
keeps none: its state dicts load here as past their first step). The param group carries the
real class's `maximize` (the gradient negated).

ASGD, SGD's averaging variant, is here too: the same descent with a decaying step size and a
running average of the parameter, all in tensors."""

import torch
from torch.optim.optimizer import ParamsT

from csadmin.errors import InvalidArgument

from ..backend.device import storage_device
from ..checks import number, real
from .optimizer import Optimizer, closure_loss
from .update import descend, gradient, with_gradients, with_l2, zeros


class SGD(Optimizer):
    """SGD(params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, maximize=False),
    the same numbers as torch.optim.SGD."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 maximize=False):
        owner = "SGD"
        defaults = dict(lr=number(owner, "lr", lr), momentum=number(owner, "momentum", momentum),
                        dampening=number(owner, "dampening", dampening),
                        weight_decay=number(owner, "weight_decay", weight_decay), nesterov=bool(nesterov),
                        maximize=bool(maximize))
        if nesterov and (defaults["momentum"] <= 0 or defaults["dampening"] != 0):
            raise InvalidArgument("SGD: Nesterov momentum requires a momentum and zero dampening.")
        super().__init__(params, defaults, enable_global_step=defaults["momentum"] != 0 and defaults["dampening"] != 0)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            if group["momentum"] != 0:
                for p in group["params"]:
                    self.state[p]["momentum_buffer"] = zeros(p)

    def state_names_to_sparsify(self) -> list[str]:
        return ["momentum_buffer"] if any(group["momentum"] != 0 for group in self.param_groups) else []

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            momentum, dampening, decay = group["momentum"], group["dampening"], group["weight_decay"]
            for p in with_gradients(group["params"]):
                d_p = gradient("SGD", p, group["maximize"])
                d_p = with_l2(d_p, p, decay)
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

    def load_state_dict(self, state_dict: dict) -> None:
        """Ours, torch.optim.SGD's, and the real class's, whose groups may lack `maximize` (torch's
        older ones) and whose state has no `step` (with dampening, it loads as past step 1)."""
        if isinstance(state_dict, dict) and {"state", "param_groups"} <= set(state_dict) and self.enable_global_step:
            state = {index: entries if "step" in entries else {**entries, "step": torch.ones(())}
                     for index, entries in state_dict["state"].items()}
            state_dict = {**state_dict, "state": state}
        super().load_state_dict(state_dict)



class ASGD(Optimizer):
    """ASGD(params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
    averaged SGD, torch.optim.ASGD's numbers. Its per-parameter state is torch's: `eta` (the
    step size, 0-d), `mu` (the averaging rate, 0-d), `ax` (the running average of the
    parameter) and `step`. The step size decays as lr / (1 + lambd·lr·t)^alpha and averaging
    starts after step t0; both are computed from the step tensor in float64 (torch's Python
    floats) and written into the float32 state in place, so the captured step keeps decaying."""

    def __init__(self, params: ParamsT, lr: float = 1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, maximize=False):
        owner = "ASGD"
        # The real class checks only lr and weight_decay; lambd, alpha and t0 may take any value.
        defaults = dict(lr=number(owner, "lr", lr), lambd=real(owner, "lambd", lambd),
                        alpha=real(owner, "alpha", alpha), t0=real(owner, "t0", t0),
                        weight_decay=number(owner, "weight_decay", weight_decay), maximize=bool(maximize))
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["eta"] = torch.tensor(float(group["lr"]), device=storage_device(p))
                self.state[p]["mu"] = torch.tensor(1.0, device=storage_device(p))
                self.state[p]["ax"] = zeros(p)

    def state_names_to_sparsify(self) -> list[str]:
        return ["ax"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            lr, lambd, decay = group["lr"], group["lambd"], group["weight_decay"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("ASGD", p, group["maximize"]), self.state[p]
                step = self.increment_global_step(p).double()
                grad = with_l2(grad, p, decay)
                eta, mu, ax = state["eta"], state["mu"], state["ax"]
                p.mul_(1 - lambd * eta)
                p.sub_(grad * eta)
                # torch copies p while mu is 1 (before t0) and averages after: a tensor choice here.
                ax.copy_(torch.where(mu == 1, p, ax.add(p.sub(ax).mul_(mu))))
                eta.copy_(lr / torch.pow(1 + lambd * lr * step, group["alpha"]))
                mu.copy_(1 / torch.clamp(step - group["t0"], min=1))
        return loss
