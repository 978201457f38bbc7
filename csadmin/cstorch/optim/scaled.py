"""cstorch.optim.Lamb and Adafactor: the optimizers that scale each parameter's step by the size
of the parameter itself, as the real Cerebras classes compute them, as static programs. Neither
has a torch.optim counterpart.

Lamb (You et al. 2019, "Large Batch Optimization for Deep Learning"): Adam's moments without
bias correction, the update scaled by the trust ratio ‖p‖/‖update‖ (‖p‖ clamped to 10; 1 when
either norm is 0), chosen by torch.where rather than an if on the norms' values.

Adafactor (Shazeer & Stern 2018): the second moment of a parameter of two or more dimensions is
kept factored, as running averages of its rows' and columns' means; the step is relative to the
parameter's RMS (scale_parameter) and clipped by the update's RMS. The real class builds only the
published configuration without first moment and relative step, and refuses the others.
"""

import torch
from torch.optim.optimizer import ParamsT

from csadmin.errors import InvalidArgument

from ..backend.device import storage_device
from ..checks import betas_pair, number, real
from .optimizer import Optimizer, closure_loss
from .update import decay_off, descend, gradient, with_gradients, with_l2, zeros


class Lamb(Optimizer):
    """Lamb(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, adam=False): the step
    is lr·r·(m/(√v + eps) + wd·p) with r the trust ratio (module docstring), or r = 1 with
    `adam=True`. State `exp_avg`, `exp_avg_sq`. lr and eps must be at least 0, betas in [0, 1);
    weight_decay is not checked (as the real class)."""

    def __init__(self, params: ParamsT, lr: float = 1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0, adam=False):
        owner = "Lamb"
        defaults = dict(lr=number(owner, "lr", lr), betas=betas_pair(owner, betas), eps=number(owner, "eps", eps),
                        weight_decay=real(owner, "weight_decay", weight_decay), adam=bool(adam))
        super().__init__(params, defaults)

    def preinitialize(self) -> None:
        self.zero_state("exp_avg", "exp_avg_sq")

    def state_names_to_sparsify(self) -> list[str]:
        return ["exp_avg", "exp_avg_sq"]

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("Lamb", p), self.state[p]
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                update = exp_avg / exp_avg_sq.sqrt().add_(group["eps"])
                update = with_l2(update, p, group["weight_decay"])
                if not group["adam"]:
                    weight_norm = p.square().sum().sqrt().clamp(0, 10).float()
                    update_norm = update.square().sum().sqrt().float()
                    usable = (weight_norm > 0) & (update_norm > 0)
                    update.mul_(torch.where(usable, weight_norm / update_norm, 1.0))
                descend(p, update, group["lr"], scratch=True)
        return loss


class Adafactor(Optimizer):
    """Adafactor(params, lr, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
    weight_decay=0.0, scale_parameter=True, relative_step=False, warmup_init=False).

    lr has no default: pass it, or None and schedule it (a step with no lr is refused). eps is
    (ε1 added to g², ε2 the least parameter RMS the step scales by). β2 at step t is 1 - t^decay_rate.
    State: `exp_avg_sq_row` and `exp_avg_sq_col` (float32, the factored second moment) for a
    parameter of two or more dimensions, `exp_avg_sq` for the others, and `step`. Refused as the
    real class refuses them: relative_step, warmup_init, a beta1, a clip_threshold other than 1.0,
    an lr together with relative_step, and an eps that is not two floats."""

    def __init__(self, params: ParamsT, lr: float, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                 weight_decay=0.0, scale_parameter=True, relative_step=False, warmup_init=False):
        owner = "Adafactor"
        if lr is not None and relative_step:
            raise InvalidArgument(f"{owner}: cannot combine a manual lr and relative_step=True.",
                                  hint="Pass lr and leave relative_step False (relative steps are not built).")
        if warmup_init and not relative_step:
            raise InvalidArgument(f"{owner}: warmup_init=True is not supported yet.", hint="Leave warmup_init False.")
        if clip_threshold != 1.0:
            raise InvalidArgument(f"{owner}: only clip_threshold=1.0 is supported now; it was set to "
                                  f"{clip_threshold}.", hint="Leave clip_threshold at 1.0.")
        if beta1 is not None:
            raise InvalidArgument(f"{owner}: only beta1=None is supported now; it was set to {beta1}.",
                                  hint="Leave beta1 None (no first moment).")
        if relative_step:
            raise InvalidArgument(f"{owner}: relative_step=True is not supported yet.", hint="Pass an lr instead.")
        if not isinstance(eps, (tuple, list)) or len(eps) != 2 or not all(isinstance(e, float) for e in eps):
            raise InvalidArgument(f"{owner}: eps must be a tuple or list of two floats; got {eps!r}.",
                                  hint="For example eps=(1e-30, 1e-3).")
        defaults = dict(lr=None if lr is None else real(owner, "lr", lr), eps=tuple(eps),
                        clip_threshold=float(clip_threshold), decay_rate=real(owner, "decay_rate", decay_rate),
                        beta1=None, weight_decay=real(owner, "weight_decay", weight_decay),
                        scale_parameter=bool(scale_parameter), relative_step=False, warmup_init=False)
        super().__init__(params, defaults, enable_global_step=True)

    def preinitialize(self) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() >= 2:
                    shape = p.shape
                    self.state[p]["exp_avg_sq_row"] = torch.zeros(shape[:-1], device=storage_device(p))
                    self.state[p]["exp_avg_sq_col"] = torch.zeros(shape[:-2] + shape[-1:], device=storage_device(p))
                else:
                    self.state[p]["exp_avg_sq"] = zeros(p)

    def state_names_to_sparsify(self) -> list[str]:
        """Only the unfactored moments are shaped like their parameters."""
        return ["exp_avg_sq"] if any(p.dim() < 2 for p in self.parameters()) else []

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure_loss(closure)
        for group in self.param_groups:
            if group["lr"] is None and any(p.grad is not None for p in group["params"]):
                raise InvalidArgument("Adafactor: the learning rate is not set for the group.",
                                      hint="Pass lr to the constructor, or schedule it with a "
                                           "cstorch.optim.lr_scheduler (which sets it).")
            eps_square, eps_scale = group["eps"]
            for p in with_gradients(group["params"]):
                grad, state = gradient("Adafactor", p), self.state[p]
                step = self.increment_global_step(p)
                lr = group["lr"]
                if group["scale_parameter"]:  # relative to the parameter's RMS before this step
                    lr = torch.clamp(_rms(p), min=eps_scale) * lr
                beta2 = 1.0 - torch.pow(step, group["decay_rate"])
                squared = grad.square().add_(eps_square)
                if "exp_avg_sq_row" in state:
                    row, col = state["exp_avg_sq_row"], state["exp_avg_sq_col"]
                    row.mul_(beta2).add_(squared.mean(dim=-1).mul_(1.0 - beta2))
                    col.mul_(beta2).add_(squared.mean(dim=-2).mul_(1.0 - beta2))
                    row_factor = row.div(row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
                    update = torch.mul(row_factor, col.rsqrt().unsqueeze(-2)).mul_(grad)
                else:
                    exp_avg_sq = state["exp_avg_sq"]
                    exp_avg_sq.mul_(beta2).add_(squared.mul_(1.0 - beta2))
                    update = exp_avg_sq.rsqrt().mul_(grad)
                update.div_(torch.clamp(_rms(update) / group["clip_threshold"], min=1.0))
                if not decay_off(group["weight_decay"]):
                    p.sub_(p.mul(group["weight_decay"] * lr))
                descend(p, update, lr, scratch=True)
        return loss


def _rms(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.square().mean().sqrt()
