"""cstorch.optim.Adagrad, Adadelta and RMSprop: the optimizers that divide each coordinate's step
by the root of its accumulated squared gradients, torch.optim's numbers as static programs.

Their constructors are the real Cerebras classes' (their defaults, which are not always torch's:
Adagrad's eps is 1e-6, torch's 1e-10; and the same values refused), and their state is torch's
names, so a torch.optim checkpoint of the same optimizer loads when the state names agree.
"""

import torch
from torch.optim.optimizer import ParamsT

from ..checks import number
from .optimizer import Optimizer, closure_loss
from .update import descend, descend_ratio, gradient, with_gradients, with_l2, zeros



class Adagrad(Optimizer):
    """Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-6,
    maximize=False): the sum of squared gradients (`sum`, starting at initial_accumulator_value)
    divides the step; the step size decays as lr / (1 + (t - 1)·lr_decay), a tensor function of
    the global step (`step`). Every argument must be at least 0."""

    def __init__(self, params: ParamsT, lr: float = 1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-6,
                 maximize=False):
        owner = "Adagrad"
        defaults = dict(lr=number(owner, "lr", lr), lr_decay=number(owner, "lr_decay", lr_decay),
                        eps=number(owner, "eps", eps), weight_decay=number(owner, "weight_decay", weight_decay),
                        initial_accumulator_value=number(owner, "initial_accumulator_value",
                                                         initial_accumulator_value),
                        maximize=bool(maximize))
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"] = torch.full_like(p, group["initial_accumulator_value"],
                                                       memory_format=torch.preserve_format)

    def state_names_to_sparsify(self) -> list[str]:
        return ["sum"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            lr, lr_decay, decay = group["lr"], group["lr_decay"], group["weight_decay"]
            for p in with_gradients(group["params"]):
                grad = gradient("Adagrad", p, group["maximize"])
                step = self.increment_global_step(p).double()
                grad = with_l2(grad, p, decay)
                state_sum = self.state[p]["sum"]
                state_sum.addcmul_(grad, grad, value=1)
                std = state_sum.sqrt().add_(group["eps"])
                # Without decay the rate is lr itself (torch's numbers exactly); with it, a tensor of the step.
                rate = lr if lr_decay == 0 else lr / (1 + (step - 1) * lr_decay)
                descend_ratio(p, grad, std, rate)
        return loss


class Adadelta(Optimizer):
    """Adadelta(params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False): running
    averages of squared gradients (`square_avg`) and of squared updates (`acc_delta`) scale each
    step, which lr multiplies. lr, eps and weight_decay must be at least 0, rho in [0, 1]."""

    def __init__(self, params: ParamsT, lr: float = 1.0, rho=0.9, eps=1e-6, weight_decay=0, maximize=False):
        owner = "Adadelta"
        defaults = dict(lr=number(owner, "lr", lr), rho=number(owner, "rho", rho, 0.0, 1.0),
                        eps=number(owner, "eps", eps), weight_decay=number(owner, "weight_decay", weight_decay),
                        maximize=bool(maximize))
        super().__init__(params, defaults)

    def preinitialize(self) -> None:
        self.zero_state("square_avg", "acc_delta")

    def state_names_to_sparsify(self) -> list[str]:
        return ["square_avg", "acc_delta"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            rho, eps, decay = group["rho"], group["eps"], group["weight_decay"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("Adadelta", p, group["maximize"]), self.state[p]
                grad = with_l2(grad, p, decay)
                square_avg, acc_delta = state["square_avg"], state["acc_delta"]
                square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
                std = square_avg.add(eps).sqrt_()
                delta = acc_delta.add(eps).sqrt_().div_(std).mul_(grad)
                acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
                descend(p, delta, group["lr"], scratch=True)
        return loss


class RMSprop(Optimizer):
    """RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
    a running average of squared gradients (`square_avg`) divides the step; `centered` subtracts
    the square of the gradients' running average (`grad_avg`) first; a momentum buffer
    (`momentum_buffer`) accumulates the divided steps when momentum > 0. Every number must be at
    least 0."""

    def __init__(self, params: ParamsT, lr: float = 1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False):
        owner = "RMSprop"
        defaults = dict(lr=number(owner, "lr", lr), momentum=number(owner, "momentum", momentum),
                        alpha=number(owner, "alpha", alpha), eps=number(owner, "eps", eps),
                        centered=bool(centered), weight_decay=number(owner, "weight_decay", weight_decay))
        super().__init__(params, defaults)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["square_avg"] = zeros(p)
                if group["momentum"] > 0:
                    self.state[p]["momentum_buffer"] = zeros(p)
                if group["centered"]:
                    self.state[p]["grad_avg"] = zeros(p)

    def state_names_to_sparsify(self) -> list[str]:
        names = ["square_avg"]
        if any(group["momentum"] > 0 for group in self.param_groups):
            names.append("momentum_buffer")
        if any(group["centered"] for group in self.param_groups):
            names.append("grad_avg")
        return names

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            alpha, eps, decay, momentum = group["alpha"], group["eps"], group["weight_decay"], group["momentum"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("RMSprop", p), self.state[p]
                grad = with_l2(grad, p, decay)
                square_avg = state["square_avg"]
                square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
                if group["centered"]:
                    grad_avg = state["grad_avg"]
                    grad_avg.lerp_(grad, 1 - alpha)
                    avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_().add_(eps)
                else:
                    avg = square_avg.sqrt().add_(eps)
                if momentum > 0:
                    buf = state["momentum_buffer"]
                    buf.mul_(momentum).addcdiv_(grad, avg)
                    descend(p, buf, group["lr"])
                else:
                    descend_ratio(p, grad, avg, group["lr"])
        return loss
