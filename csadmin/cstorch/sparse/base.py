"""cstorch.sparse.SparsityAlgorithm: the base of every sparsity algorithm (the real package's).

    sparsity = cstorch.sparse.configure({"sparsity": 0.75, "param_filter": ["*fc*.weight"]})
    model.apply(sparsity)          # each chosen parameter gets a mask buffer, `<name>_mask`
    optimizer.apply(sparsity)      # its state shaped like a sparse parameter is pruned too

Sparse parameters are dense tensors and a bool mask, as the real package's CPU backend keeps
them (on the system they are stored compressed; there is no mask there). The mask is a
persistent buffer of the parameter's module named `<param>_mask` (so checkpoints carry it and
loading one restores it), made when the parameter is sparsified by the algorithm's
`init_method` at its sparsity level. Then, as in the real package: before each forward the
weight is multiplied by its mask (a forward pre-hook of the module `apply` was given) and its
gradient is masked as backward computes it (a tensor hook, registered at the first forward);
before each optimizer step the optimizer's state tensors shaped like the parameter are masked,
and after it the weight is masked again and `update(optimizer)` runs (a static algorithm's
update changes nothing but reports its level to the hooks registered with
`register_target_sparsity_hook` / `register_computed_sparsity_hook`, which ModelZoo's
LogSparsity uses). All of this is torch ops on tensors that exist before the step, so a captured
step replays it.
"""

import abc
from collections import OrderedDict
from typing import Callable, Optional

import torch
from torch.utils.hooks import RemovableHandle

from csadmin.errors import InvalidArgument, InvalidState

from ..checks import number
from ..optim.optimizer import Optimizer
from .init import InitMethodType, make_init_method


class SparsityAlgorithm(abc.ABC):
    """`sparsity` (the level, a float in [0, 1), or None where a subclass sets it) and
    `init_method` (how masks are first made: "random", "topk", "from_zeros", "checkerboard" or a
    function; see cstorch.sparse.init)."""

    def __init__(self, sparsity: Optional[float], init_method: InitMethodType = "random"):
        self.name = f"sparsity_{type(self).__name__.lower()}"
        self._level = None if sparsity is None else _level(type(self).__name__, sparsity)
        self.init_method = make_init_method(init_method)
        self.sparse_params = OrderedDict()  # parameter name -> SparseParameter
        self.sparse_optimizers = []
        self.autoupdate = True
        self._target_sparsity_hooks = OrderedDict()
        self._computed_sparsity_hooks = OrderedDict()

    @property
    def num_sparse_params(self) -> int:
        """How many parameters this algorithm sparsified."""
        return len(self.sparse_params)

    @property
    def sparsity_level(self) -> Optional[float]:
        """The level every parameter of this algorithm is held at."""
        return self._level

    def get_sparse_params(self, obj):
        """The SparseParameter of a tensor (or None), or those of a module's or an optimizer's
        parameters that this algorithm sparsified."""
        if isinstance(obj, torch.Tensor):
            return getattr(obj, "_sparse_param", None)
        if isinstance(obj, torch.nn.Module):
            params = (p for _, p in obj.named_parameters())
        elif isinstance(obj, torch.optim.Optimizer):
            params = (p for group in obj.param_groups for p in group["params"])
        else:
            raise InvalidArgument(f"get_sparse_params takes a tensor, a module or an optimizer, not a "
                                  f"{type(obj).__name__}.")
        mine = set(map(id, self.sparse_params.values()))
        return [s for p in params if (s := getattr(p, "_sparse_param", None)) is not None and id(s) in mine]

    def apply(self, obj) -> None:
        """Sparsify a module (its parameters get masks) or a cstorch optimizer (its state is
        pruned around each step). `module.apply(sparsity)` and `optimizer.apply(sparsity)` call it."""
        if isinstance(obj, torch.nn.Module):
            self.sparsify_module(obj)
        elif isinstance(obj, Optimizer):
            self.sparsify_optimizer(obj)
        else:
            raise InvalidArgument(f"Sparsity applies to a torch.nn.Module or a cstorch.optim.Optimizer, not a "
                                  f"{type(obj).__name__}.")

    def sparsify_parameter(self, module: torch.nn.Module, name: str, param: torch.Tensor) -> None:
        """Give `param` (called `name` in the model) a mask at this algorithm's level."""
        if param is None or getattr(param, "_sparse_param", None) is not None or getattr(param, "requires_dense", False):
            return
        level = torch.tensor(self._level_for(name), dtype=torch.float32)
        sparse_param = SparseParameter(module, name, lambda p: self.init_method(p, level))
        param._sparse_param = sparse_param
        self.sparse_params[name] = sparse_param

    def _level_for(self, name: str) -> float:
        if self._level is None:
            raise InvalidArgument(f"{type(self).__name__} sparsity algorithm expected `sparsity` to be specified, "
                                  "but got none.", hint="Give the sparsity level, e.g. sparsity: 0.5.")
        return self._level

    def sparsify_module(self, module: torch.nn.Module) -> None:
        """Sparsify every parameter of `module` this algorithm chooses (below its modules marked
        `requires_dense`), then prune before each forward."""
        before = self.num_sparse_params
        for name, submodule, param in _named_parameters(module):
            self.sparsify_parameter(submodule, name, param)
        if self.num_sparse_params == before:
            raise InvalidArgument(f"No parameters were sparsified in module {type(module).__name__}: the sparsity "
                                  "filter matched none of its parameters.",
                                  hint="Check param_filter against the model's parameter names.")
        module.register_forward_pre_hook(self._forward_pre_hook)

    def _forward_pre_hook(self, module, args) -> None:
        for sparse_param in self.get_sparse_params(module):
            self.prune_weight(sparse_param)

    @torch.no_grad()
    def prune_weight(self, sparse_param: "SparseParameter") -> None:
        """Mask the weight, and from the first forward on its gradient as backward makes it."""
        p = sparse_param.param
        sparse_param.prune(p)
        if p.requires_grad and sparse_param.grad_hook is None:
            sparse_param.grad_hook = p.register_hook(lambda grad: torch.where(sparse_param.mask, grad, 0.0))

    def sparsify_optimizer(self, optimizer: Optimizer) -> None:
        """Prune `optimizer`'s state shaped like each sparse parameter before its step, and the
        weights (then `update`) after it."""
        if any(o is optimizer for o in self.sparse_optimizers):
            return
        if self.sparse_optimizers:
            raise InvalidArgument("Sparsifying multiple optimizers using the same sparsity algorithm is not supported.")
        self.sparse_optimizers.append(optimizer)
        optimizer.register_step_pre_hook(self._prune_optimizer_states)
        optimizer.register_step_post_hook(self._after_step)

    def _prune_optimizer_states(self, optimizer, args, kwargs) -> None:
        params = self.get_sparse_params(optimizer)
        if not params:
            raise InvalidState("Detected that optimizer.apply(sparsity) was called but model.apply(sparsity) was not.",
                               hint="Please call model.apply(sparsity).")
        with torch.no_grad():
            for sparse_param in params:
                p = sparse_param.param
                for state in optimizer.state[p].values():
                    if isinstance(state, torch.Tensor) and state.shape == p.shape:
                        sparse_param.prune(state)

    def _after_step(self, optimizer, args, kwargs) -> None:
        with torch.no_grad():
            for sparse_param in self.get_sparse_params(optimizer):
                sparse_param.prune(sparse_param.param)
        if self.autoupdate:
            self.update(optimizer)

    @abc.abstractmethod
    def update(self, optimizer: Optional[Optimizer] = None) -> None:
        """Update the masks after an optimizer step (and report the levels to the hooks)."""

    def register_target_sparsity_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(sparsity, name, target)`, called with each target level the algorithm computes."""
        handle = RemovableHandle(self._target_sparsity_hooks)
        self._target_sparsity_hooks[handle.id] = hook
        return handle

    def register_computed_sparsity_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(sparsity, name, computed)`, called with each mask's actual level."""
        handle = RemovableHandle(self._computed_sparsity_hooks)
        self._computed_sparsity_hooks[handle.id] = hook
        return handle

    def visit_state(self, f: Callable) -> None:
        """Apply `f` to the algorithm's own stateful tensors (a static algorithm has none)."""

    def state_dict(self) -> dict:
        """The algorithm's own state (the masks are the model's buffers)."""
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Load what state_dict() gave (nothing for a static algorithm)."""


class SparseParameter:
    """One sparse parameter: its module, its name and its mask (the module's `<param>_mask`
    buffer, made when the parameter is sparsified)."""

    def __init__(self, module: torch.nn.Module, name: str, init_method: Callable):
        self.module = module
        self.name = name
        self.param_name = name.rsplit(".", 1)[-1]
        self.mask_name = f"{self.param_name}_mask"
        self.grad_hook = None
        with torch.no_grad():
            mask = init_method(self.param)
        if not isinstance(mask, torch.Tensor) or mask.shape != self.param.shape:
            raise InvalidArgument(f"The sparsity init_method gave {type(mask).__name__} "
                                  f"{tuple(getattr(mask, 'shape', ()))} for {name}; it returns a bool mask of the "
                                  f"parameter's shape {tuple(self.param.shape)}.")
        module.register_buffer(self.mask_name, mask.to(torch.bool), persistent=True)

    @property
    def param(self) -> torch.Tensor:
        return self.module._parameters[self.param_name]

    @property
    def mask(self) -> torch.Tensor:
        return self.module._buffers[self.mask_name]

    def prune(self, tensor: torch.Tensor) -> None:
        """Zero `tensor` where the mask prunes (in place)."""
        tensor.mul_(self.mask)

    def __str__(self) -> str:
        return f"SparseParameter({self.name})"


def _named_parameters(module: torch.nn.Module):
    """(full name, owning module, parameter) for each parameter, skipping `requires_dense` modules."""
    for prefix, submodule in module.named_modules():
        if getattr(submodule, "requires_dense", False):
            continue
        for name, param in submodule._parameters.items():
            if param is not None:
                yield (f"{prefix}.{name}" if prefix else name), submodule, param


def _level(owner: str, sparsity) -> float:
    """A sparsity level: a number in [0, 1) (1 would prune every weight)."""
    return number(owner, "sparsity", sparsity, 0.0, 1.0, below_high=True)
