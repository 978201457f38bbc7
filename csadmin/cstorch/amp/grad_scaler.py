"""cstorch.amp.GradScaler: loss scaling with the document's seven parameters (004, "Using Gradient
Scaling"), used like torch.cuda.amp.GradScaler:

    grad_scaler = cstorch.amp.GradScaler(loss_scale="dynamic")
    grad_scaler.scale(loss).backward()
    grad_scaler.unscale_(optimizer)          # optional: clip the true gradients after it
    grad_scaler.step(optimizer)
    grad_scaler.update()

loss_scale: "dynamic", a number (static scaling by it), or 0.0 (the default: no scaling; every
method passes through, as torch's scaler with enabled=False).

Dynamic scaling, as torch ops so the captured step replays it: a step whose gradients hold an
inf or NaN is skipped (the parameters and optimizer state are put back with torch.where, since
no Python `if` on a tensor survives capture). The loss scale is halved (not below
min_loss_scale) when the fraction of overflowing steps since the last change of scale exceeds
overflow_tolerance, and doubled (not above max_loss_scale) after steps_per_increase clean steps
in a row. Defaults: init_scale 2**15, steps_per_increase 2000, min_loss_scale 2**-14,
max_loss_scale 2**15, overflow_tolerance 0.05. max_gradient_norm is kept for
`cstorch.amp.optimizer_step`, which clips by it in pipelined mode only (the document's note).

`state_dict()` has the real class's names (as it gives them on a CSX backend): dynamic,
`loss_scale` (float32) and the int64 counters `steps_since_rescale`, `overflows_since_rescale`,
`num_skipped_steps` (steps skipped for an inf/NaN, in all), plus `clean_steps`, this scaler's own
(its growth counts clean steps in a row); static or off, `loss_scale` alone, a float. A real
dynamic state dict, without `clean_steps`, loads with it taken as `steps_since_rescale` when no
step since the last change of scale overflowed, else 0.
"""

from __future__ import annotations

import numbers

import torch

from csadmin.errors import InvalidArgument

from ..checks import number, whole

DEFAULTS = dict(init_scale=2.0**15, steps_per_increase=2000, min_loss_scale=2.0**-14, max_loss_scale=2.0**15)
_DYNAMIC_ONLY = tuple(DEFAULTS)


class GradScaler:
    """See the module docstring. State (the scale and the counters) is 0-d float32 tensors
    updated in place; `state_dict()`/`load_state_dict()` carry it across a checkpoint."""

    def __init__(self, loss_scale=0.0, init_scale=None, steps_per_increase=None, min_loss_scale=None,
                 max_loss_scale=None, overflow_tolerance=0.05, max_gradient_norm=None):
        given = dict(init_scale=init_scale, steps_per_increase=steps_per_increase,
                     min_loss_scale=min_loss_scale, max_loss_scale=max_loss_scale)
        self.dynamic = loss_scale == "dynamic"
        if not self.dynamic:
            if isinstance(loss_scale, bool) or not isinstance(loss_scale, numbers.Real) or not loss_scale >= 0:
                raise InvalidArgument(f"GradScaler: loss_scale must be 'dynamic' or a number ≥ 0; got {loss_scale!r}.")
            extra = [name for name, value in given.items() if value is not None]
            if extra:
                raise InvalidArgument(f"GradScaler: {', '.join(extra)} only apply with loss_scale='dynamic'.")
        settings = {name: DEFAULTS[name] if value is None else value for name, value in given.items()}
        self.init_scale = number("GradScaler", "init_scale", settings["init_scale"], 0.0)
        self.steps_per_increase = whole("GradScaler", "steps_per_increase", settings["steps_per_increase"], 1)
        self.min_loss_scale = number("GradScaler", "min_loss_scale", settings["min_loss_scale"], 0.0)
        self.max_loss_scale = number("GradScaler", "max_loss_scale", settings["max_loss_scale"], self.min_loss_scale)
        if not self.min_loss_scale > 0:  # a zero scale zeroes every gradient, and unscaling divides by it
            raise InvalidArgument(f"GradScaler: min_loss_scale must be above 0; got {self.min_loss_scale}.")
        if self.dynamic and not self.min_loss_scale <= self.init_scale <= self.max_loss_scale:
            raise InvalidArgument(f"GradScaler: init_scale {self.init_scale} must lie in [min_loss_scale, "
                                  f"max_loss_scale] = [{self.min_loss_scale}, {self.max_loss_scale}].")
        self.overflow_tolerance = number("GradScaler", "overflow_tolerance", overflow_tolerance, 0.0, 1.0)
        self.max_gradient_norm = None if max_gradient_norm is None else number(
            "GradScaler", "max_gradient_norm", max_gradient_norm, 0.0)
        self.enabled = self.dynamic or loss_scale > 0
        start = self.init_scale if self.dynamic else float(loss_scale or 1.0)
        self._scale = torch.tensor(start, dtype=torch.float32)
        self._steps = torch.zeros((), dtype=torch.float32)  # steps since the scale last changed
        self._overflows = torch.zeros((), dtype=torch.float32)  # overflowing steps among them
        self._clean = torch.zeros((), dtype=torch.float32)  # clean steps in a row
        self._skipped = torch.zeros((), dtype=torch.float32)  # steps skipped for an inf/NaN, in all
        # the last update's new scale before min/max_loss_scale clamped it (get_non_clamped_scale)
        self._non_clamped = self._scale.clone()
        self._found: dict[int, torch.Tensor] = {}  # this step's optimizers (by id) -> inf/NaN found
        self._stepped: set[int] = set()  # this step's optimizers already stepped

    # -- torch's GradScaler methods ----------------------------------------------------------------

    def scale(self, outputs):
        """`outputs` (a tensor or nested lists/tuples of them) times the loss scale."""
        if not self.enabled:
            return outputs
        if isinstance(outputs, torch.Tensor):
            return outputs * self._scale.to(outputs.device)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(item) for item in outputs)
        raise InvalidArgument(f"GradScaler.scale takes a tensor (the loss), not a {type(outputs).__name__}.")

    def unscale_(self, optimizer) -> None:
        """Divide `optimizer`'s gradients by the scale in place and note whether any is inf/NaN.
        Once per optimizer per step, before `step`."""
        if not self.enabled:
            return
        if id(optimizer) in self._found:
            raise InvalidArgument("GradScaler.unscale_() was already called on this optimizer since the last update().")
        inverse = self._scale.double().reciprocal().float()
        found = torch.zeros((), dtype=torch.bool)
        with torch.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        found = found | ~torch.isfinite(p.grad).all()
                        p.grad.mul_(inverse.to(p.grad.dtype))
        self._found[id(optimizer)] = found

    def step(self, optimizer, *args, **kwargs):
        """`optimizer.step(...)` (unscaling first if not done), undone where an inf/NaN was found
        (dynamic scaling). Returns None: whether the step was taken is a tensor, not a bool."""
        if not self.enabled:
            return optimizer.step(*args, **kwargs)
        if id(optimizer) in self._stepped:
            raise InvalidArgument("GradScaler.step() was already called on this optimizer since the last update().",
                                  hint="Call grad_scaler.update() once after stepping every optimizer.")
        self._stepped.add(id(optimizer))
        if id(optimizer) not in self._found:
            self.unscale_(optimizer)
        if not self.dynamic:
            optimizer.step(*args, **kwargs)
            return None
        found = self._found[id(optimizer)]
        kept = _tensors(optimizer)
        before = [t.detach().clone() for t in kept]
        optimizer.step(*args, **kwargs)
        with torch.no_grad():
            for tensor, old in zip(kept, before):
                tensor.copy_(torch.where(found, old, tensor))
        return None

    def update(self, new_scale=None) -> None:
        """After every optimizer stepped: adjust the scale (dynamic) or set it to `new_scale`."""
        found = [self._found.pop(key) for key in list(self._found)]
        self._stepped.clear()
        if not self.enabled:
            return
        with torch.no_grad():
            if new_scale is not None:
                self._scale.copy_(torch.as_tensor(new_scale, dtype=torch.float32))
                return
            if not self.dynamic or not found:
                return
            overflow = torch.stack(found).any()
            steps = self._steps + 1
            overflows = self._overflows + overflow.float()
            clean = torch.where(overflow, torch.zeros_like(self._clean), self._clean + 1)
            back_off = overflow & (overflows / steps > self.overflow_tolerance)
            grow = ~overflow & (clean >= self.steps_per_increase)
            wanted = torch.where(back_off, self._scale / 2, torch.where(grow, self._scale * 2, self._scale))
            self._non_clamped.copy_(wanted)
            scale = torch.clamp(wanted, min=self.min_loss_scale, max=self.max_loss_scale)
            changed = back_off | grow
            self._scale.copy_(scale)
            self._steps.copy_(torch.where(changed, torch.zeros_like(steps), steps))
            self._overflows.copy_(torch.where(changed, torch.zeros_like(overflows), overflows))
            self._clean.copy_(torch.where(grow, torch.zeros_like(clean), clean))
            self._skipped.add_(overflow.float())

    def get_scale(self) -> torch.Tensor:
        """The current loss scale (a tensor: read it in a step closure)."""
        return self._scale.detach().clone()

    def get_non_clamped_scale(self) -> torch.Tensor:
        """The scale the last update wanted before min_loss_scale and max_loss_scale clamped it
        (dynamic; otherwise the scale): below get_scale() when backing off hit the minimum, which
        ModelZoo takes for a NaN training cannot recover from."""
        return (self._non_clamped if self.dynamic else self._scale).detach().clone()

    def is_enabled(self) -> bool:
        return self.enabled

    def state_dict(self) -> dict:
        if not self.dynamic:
            return {"loss_scale": self._scale.item()}
        counters = {name: tensor.to(torch.int64) for name, tensor in self._counters().items()}
        return {"loss_scale": self._scale.clone(), **counters}

    def _counters(self) -> dict:
        return {"steps_since_rescale": self._steps, "overflows_since_rescale": self._overflows,
                "num_skipped_steps": self._skipped, "clean_steps": self._clean}

    def load_state_dict(self, state_dict: dict) -> None:
        """Copy a saved scale and counters in place (the captured step keeps its tensors): ours,
        or the real class's (see the module docstring)."""
        required = {"loss_scale"} | (set(self._counters()) - {"clean_steps"} if self.dynamic else set())
        known = {"loss_scale", *self._counters()}
        if not isinstance(state_dict, dict) or not required <= set(state_dict) <= known:
            given = sorted(map(str, state_dict)) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise InvalidArgument(f"A GradScaler state dict has the keys {sorted(required)} (and, from this "
                                  f"project's, 'clean_steps'); this one has {given}.",
                                  hint="Pass what grad_scaler.state_dict() returned.")
        with torch.no_grad():
            self._scale.copy_(torch.as_tensor(state_dict["loss_scale"], dtype=torch.float32))
            if not self.dynamic:
                return
            values = {name: torch.as_tensor(state_dict[name], dtype=torch.float32)
                      for name in required - {"loss_scale"}}
            values["clean_steps"] = torch.as_tensor(state_dict["clean_steps"], dtype=torch.float32) \
                if "clean_steps" in state_dict else \
                torch.where(values["overflows_since_rescale"] == 0, values["steps_since_rescale"], 0.0)
            for name, tensor in self._counters().items():
                tensor.copy_(values[name])


def _tensors(optimizer) -> list[torch.Tensor]:
    """Everything an optimizer step writes: the parameters and every state tensor."""
    found = [p for group in optimizer.param_groups for p in group["params"]]
    for state in optimizer.state.values():
        found.extend(value for value in state.values() if isinstance(value, torch.Tensor))
    return found
