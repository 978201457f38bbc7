"""Plain eager references for the optimizers torch.optim has not (or computes otherwise), written
from the published algorithms as the real Cerebras classes compute them, with Python control flow
and Python floats where the classes use tensors and torch.where: an independent spelling.

Each `name(**hyperparameters)` returns `update(params, lr)`, which takes one step of every
parameter from its `.grad` (call it under torch.no_grad()); its state lives in the closure.
"""

import torch


def nadam(betas=(0.9, 0.999), eps=1e-8, momentum_decay=4e-3):
    """torch.optim.NAdam's update with the real class's divisor of the momentum term, 1 - μ_{t+1}·μ_t·Πμ."""
    beta1, beta2 = betas
    moments, product, t = {}, [1.0], [0]

    def update(params, lr):
        t[0] += 1
        mu = beta1 * (1 - 0.5 * 0.96 ** (t[0] * momentum_decay))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t[0] + 1) * momentum_decay))
        product[0] *= mu
        for p in params:
            m, v = moments.setdefault(p, (torch.zeros_like(p), torch.zeros_like(p)))
            m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            denom = (v / (1 - beta2 ** t[0])).sqrt() + eps
            p -= lr * (1 - mu) / (1 - product[0]) * p.grad / denom
            p -= lr * mu_next / (1 - product[0] * mu * mu_next) * m / denom
    return update


def lion(betas=(0.9, 0.99), weight_decay=0.0):
    """Lion (Chen et al. 2023): decoupled decay, the sign of the interpolated momentum, then the momentum."""
    beta1, beta2 = betas
    momentum = {}

    def update(params, lr):
        for p in params:
            m = momentum.setdefault(p, torch.zeros_like(p))
            p *= 1 - lr * weight_decay
            p -= lr * torch.sign(beta1 * m + (1 - beta1) * p.grad)
            m.mul_(beta2).add_((1 - beta2) * p.grad)
    return update


def lamb(betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0, adam=False):
    """LAMB (You et al. 2019) as the real class computes it: no bias correction, ‖p‖ clamped to 10,
    the trust ratio 1 where either norm is 0."""
    beta1, beta2 = betas
    moments = {}

    def update(params, lr):
        for p in params:
            m, v = moments.setdefault(p, (torch.zeros_like(p), torch.zeros_like(p)))
            m.mul_(beta1).add_((1 - beta1) * p.grad)
            v.mul_(beta2).add_((1 - beta2) * p.grad * p.grad)
            r = m / (v.sqrt() + eps) + weight_decay * p
            weight_norm, r_norm = min(p.norm().item(), 10.0), r.norm().item()
            trust = 1.0 if adam or weight_norm == 0 or r_norm == 0 else weight_norm / r_norm
            p -= lr * trust * r
    return update


def adafactor(eps=(1e-30, 1e-3), decay_rate=-0.8, weight_decay=0.0, scale_parameter=True):
    """Adafactor (Shazeer & Stern 2018) as the real class computes it: no first moment, β2_t = 1 - t^decay_rate,
    the second moment of a matrix factored into row and column averages, the step relative to the parameter's
    RMS (at least eps[1]) and the update clipped to RMS 1."""
    seconds, t = {}, [0]

    def rms(x):
        return x.pow(2).mean().sqrt().item()

    def update(params, lr):
        t[0] += 1
        beta2 = 1 - t[0] ** decay_rate
        for p in params:
            g2 = p.grad * p.grad + eps[0]
            rate = lr * (max(eps[1], rms(p)) if scale_parameter else 1.0)
            if p.dim() >= 2:
                rows, cols = seconds.setdefault(p, (torch.zeros(p.shape[:-1]),
                                                    torch.zeros(p.shape[:-2] + p.shape[-1:])))
                rows.mul_(beta2).add_((1 - beta2) * g2.mean(dim=-1))
                cols.mul_(beta2).add_((1 - beta2) * g2.mean(dim=-2))
                # V = R Cᵀ / mean(R): each matrix's rank-1 estimate of the squared gradients' average.
                v = rows.unsqueeze(-1) * cols.unsqueeze(-2) / rows.mean(dim=-1, keepdim=True).unsqueeze(-1)
            else:
                v = seconds.setdefault(p, torch.zeros_like(p))
                v.mul_(beta2).add_((1 - beta2) * g2)
            u = p.grad / v.sqrt()
            u /= max(1.0, rms(u))
            p -= weight_decay * rate * p
            p -= rate * u
    return update
