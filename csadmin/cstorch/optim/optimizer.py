"""cstorch.optim.Optimizer: the base of every Cerebras-compliant optimizer (004, "Defining a custom
Cerebras optimizer").

    class MyOptimizer(cstorch.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr), enable_global_step=True)
        def preinitialize(self):                  # every state tensor is created here, once
            for p in self.parameters():
                self.state[p]["buf"] = torch.zeros_like(p)
        def step(self, closure=None):             # torch ops only, state updated in place
            ...
        def state_names_to_sparsify(self):
            return ["buf"]

Why the rules: the runtime captures the first step as one static program and replays it, so the
Python in `step` runs once. A state tensor made later, or a state entry rebound to a new tensor,
would not exist in (or would fall out of) the replayed program; so state is created only inside
`preinitialize` (the document's rule, enforced) and only updated in place afterwards, and it is
made of tensors (a Python number would be frozen at its first value). The learning rate is read
from the param group each step, and is a tensor once a scheduler drives it.

`state_dict()` may only be taken on a checkpoint step (the backend's rule,
backend/process_backend.py); `load_state_dict` copies into the existing tensors in place, so a
captured program keeps seeing the loaded values, and it also reads a torch.optim state dict with the
same state names (torch's Adam/AdamW). `ParamsT`, what `params` may be, is torch's type, as the real
module's is.
"""

from __future__ import annotations

import abc
import contextlib

import torch
from torch.optim.optimizer import ParamsT

from csadmin.errors import InvalidArgument, InvalidState

from ..backend import process_backend
from ..checks import plain_value
from .update import zeros

STATE_RULE = "no state variables may be initialized outside of the preinitialize method"


class Optimizer(torch.optim.Optimizer, abc.ABC):
    """`params` and `defaults` as torch.optim.Optimizer's; `enable_global_step` gives each
    parameter a float32 0-d `step` state tensor that `increment_global_step` advances."""

    def __init__(self, params: ParamsT, defaults: dict, enable_global_step: bool = False):
        # The real optimizer is built on the backend's device: a backend must exist (R1.8 scripts
        # configure, then compile, then build it; 2.x scripts make cstorch.backend first).
        backend = process_backend.current().require(
            hint="Create the backend first (cstorch.backend(...), or cstorch.configure(...) in R1.8), then build "
                 "the model, compile it, and only then make the optimizer.")
        self._frozen = False
        super().__init__(params, defaults)
        self.enable_global_step = bool(enable_global_step)
        self.state = _State(self)
        with self._initializing():
            self.preinitialize()
            if self.enable_global_step:
                for p in self.parameters():
                    self.state[p]["step"] = torch.zeros((), dtype=torch.float32)
        self._frozen = True
        backend.announce(self)  # the model directory's yaml and TensorBoard describe it

    def settings(self) -> dict:
        """What the run's yaml says of this optimizer: its type and its hyperparameters (the
        first param group's; learning rates as they are now)."""
        groups = self.param_groups
        hyper = {k: plain_value(v) for k, v in groups[0].items() if k != "params"} if groups else {}
        return {"optimizer_type": type(self).__name__, **{k: v for k, v in hyper.items() if v is not None},
                "param_groups": len(groups)}

    # -- what a subclass writes --------------------------------------------------------------------

    @abc.abstractmethod
    def preinitialize(self) -> None:
        """Create every state tensor (`self.state[p][name] = tensor`)."""

    @abc.abstractmethod
    def step(self, closure=None):
        """One update with torch ops only: no Python branch or loop on a tensor's value."""

    @abc.abstractmethod
    def state_names_to_sparsify(self) -> list[str]:
        """The names of the state tensors shaped like their parameter (sparsity applies to them)."""

    # -- helpers for subclasses ---------------------------------------------------------------------

    def parameters(self):
        """Every parameter of every group, in order."""
        for group in self.param_groups:
            yield from group["params"]

    def zero_state(self, *names: str) -> None:
        """For preinitialize: the state tensors `names` of every parameter, zeros shaped like it."""
        for p in self.parameters():
            for name in names:
                self.state[p][name] = zeros(p)

    def increment_global_step(self, p: torch.Tensor) -> torch.Tensor:
        """Advance `p`'s global step in place and return it (needs enable_global_step=True)."""
        if not self.enable_global_step:
            raise InvalidState(f"{type(self).__name__} has no global step: it was built with enable_global_step=False.")
        return self.state[p]["step"].add_(1)

    def apply(self, f):
        """`f(self)`, or for an object that is not callable but has `apply` (a cstorch.sparse
        algorithm: `optimizer.apply(sparsity)`), `f.apply(self)`, as the real Optimizer's."""
        if callable(f):
            return f(self)
        if callable(getattr(f, "apply", None)):
            return f.apply(self)
        raise InvalidArgument(f"Expected a callable as the argument to apply. Got: {type(f).__name__}")

    # -- torch.optim.Optimizer, made static --------------------------------------------------------

    def add_param_group(self, param_group: dict) -> None:
        if self._frozen:
            raise InvalidState(f"{type(self).__name__}'s parameter groups are fixed once it is built: the "
                               "step program is static.", hint="Pass every group to the constructor.")
        super().add_param_group(param_group)
        self.param_groups[-1] = _Group(self.param_groups[-1])

    def state_dict(self) -> dict:
        """torch's layout (`state` keyed by parameter index, `param_groups`), every tensor a copy.
        Refused on a step that is not a checkpoint step."""
        process_backend.current().check_weights_fetch("optimizer")
        return _copied(super().state_dict())

    def load_state_dict(self, state_dict: dict) -> None:
        """Copy a state dict of the same shape (same groups, same parameters, same state names)
        into this optimizer's tensors in place; hyperparameters of ours are taken from it."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            raise InvalidArgument("An optimizer state dict has the keys 'state' and 'param_groups'.",
                                  hint="Pass what optimizer.state_dict() returned (e.g. cstorch.load(...)['optimizer']).")
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(saved["params"]) != len(ours["params"]) for saved, ours in zip(groups, self.param_groups)):
            raise InvalidArgument(
                f"The optimizer state dict has groups of {[len(g['params']) for g in groups]} parameters; "
                f"this {type(self).__name__} has {[len(g['params']) for g in self.param_groups]}.",
                hint="Load the state of an optimizer built over the same parameters.")
        with torch.no_grad():
            for saved, ours in zip(groups, self.param_groups):
                for key, value in saved.items():
                    if key != "params" and key in ours:
                        _assign(ours, key, value)
                for index, p in zip(saved["params"], ours["params"]):
                    self._load_param_state(index, state_dict["state"].get(index, {}), p)

    def _load_param_state(self, index, saved: dict, p: torch.Tensor) -> None:
        ours = self.state.get(p, {})
        if set(saved) != set(ours):
            raise InvalidArgument(
                f"The optimizer state of parameter {index} has {sorted(saved)}; this "
                f"{type(self).__name__} keeps {sorted(ours)}.",
                hint="Load the state of the same kind of optimizer with the same settings.")
        for name, tensor in ours.items():
            value = saved[name]
            if not isinstance(value, torch.Tensor) or value.numel() != tensor.numel():
                raise InvalidArgument(f"The optimizer state {name!r} of parameter {index} does not fit "
                                      f"its tensor of shape {tuple(tensor.shape)}.")
            tensor.copy_(value.reshape(tensor.shape))

    @contextlib.contextmanager
    def _initializing(self):
        self._preinitializing = True
        try:
            yield
        finally:
            self._preinitializing = False

    # copy.deepcopy and pickle: torch keeps only defaults, state and param_groups.
    def __getstate__(self) -> dict:
        return {**super().__getstate__(), "enable_global_step": self.enable_global_step, "_frozen": True}

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.state = _State(self, state.get("state", {}))


def closure_loss(closure):
    """torch's `step(closure)` contract: the closure's loss, computed with gradients enabled."""
    if closure is None:
        return None
    with torch.enable_grad():
        return closure()


class _Group(dict):
    """A param group: its hyperparameters may not be set inside a step, where a Python value
    would be captured once and frozen (torch's own lr schedulers do exactly that)."""

    def __setitem__(self, key, value):
        if process_backend.current().in_step():
            raise InvalidState(
                f"param_groups[...][{key!r}] was set inside a compiled step: a Python value set there is "
                f"captured once and frozen at its first value; the vanilla PyTorch learning rate schedulers "
                f"are not compatible with traced lazy execution.",
                hint="Schedule the learning rate with cstorch.optim.lr_scheduler (it updates a tensor in place), "
                     "or set hyperparameters outside the step.")
        super().__setitem__(key, value)

    def __reduce__(self):
        return _Group, (dict(self),)


class _State(dict):
    """optimizer.state: parameter -> its state, which takes new entries only in preinitialize."""

    def __init__(self, optimizer: Optimizer, items=()):
        super().__init__()
        self._optimizer = optimizer
        for p, entries in dict(items).items():
            dict.__setitem__(self, p, _ParamState(optimizer, entries))

    def __reduce__(self):
        return _State, (self._optimizer, dict(self))

    def __missing__(self, p):
        entries = dict.setdefault(self, p, _ParamState(self._optimizer))
        return entries

    def __setitem__(self, p, value):
        """In preinitialize, `self.state[p] = {name: tensor, …}` creates p's state (as torch's
        optimizers write it); anywhere else it would replace state a captured program holds."""
        if not getattr(self._optimizer, "_preinitializing", False):
            raise InvalidState(f"{type(self._optimizer).__name__}.state[param] was replaced: {STATE_RULE}.",
                               hint="Set self.state[p][name] in preinitialize(); update the tensors in place.")
        entries = _ParamState(self._optimizer)
        entries.update(value)  # each entry checked: a tensor
        dict.__setitem__(self, p, entries)


class _ParamState(dict):
    """One parameter's state: name -> tensor, created in preinitialize, updated in place after."""

    def __init__(self, optimizer: Optimizer, entries=()):
        super().__init__(entries)
        self._optimizer = optimizer

    def __setitem__(self, name, value):
        owner = type(self._optimizer).__name__
        if not getattr(self._optimizer, "_preinitializing", False):
            if name in self:
                raise InvalidState(f"{owner} rebound its state variable {name!r} to a new tensor outside "
                                   f"preinitialize: {STATE_RULE}, and state is updated in place.",
                                   hint=f"Update it in place (e.g. state[{name!r}].mul_(...).add_(...), or .copy_(new)).")
            raise InvalidState(f"{owner} created the state variable {name!r} outside preinitialize: {STATE_RULE}.",
                               hint="Create it in preinitialize() and update it in place in step().")
        if not isinstance(value, torch.Tensor):
            raise InvalidArgument(f"{owner}'s state variable {name!r} is a {type(value).__name__}; optimizer "
                                  "state is tensors (a Python value would be frozen at its first value in a "
                                  "compiled step).", hint="Make it a tensor, e.g. torch.tensor(value).")
        super().__setitem__(name, value)

    def __reduce__(self):
        return _ParamState, (self._optimizer, dict(self))

    def setdefault(self, name, value=None):
        if name not in self:
            self[name] = value
        return self[name]

    def update(self, *args, **kwargs):
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def __delitem__(self, name):
        raise InvalidState(f"{type(self._optimizer).__name__} deleted its state variable {name!r}: state "
                           "lives as long as the optimizer.")


def _assign(group: dict, key: str, value) -> None:
    """Take a hyperparameter: into a tensor in place (a scheduler's lr), else by value."""
    if isinstance(group[key], torch.Tensor):
        group[key].copy_(torch.as_tensor(value, dtype=group[key].dtype))
    else:
        group[key] = value.item() if isinstance(value, torch.Tensor) and value.numel() == 1 else value


def _copied(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_copied(item) for item in value)
    return value
