"""cstorch.sparse.Group: several sparsity algorithms, each over the parameters its filter picks
(the real class): the first filter a parameter's name matches decides its algorithm.

    sparsity = cstorch.sparse.Group({"fc1.*": cstorch.sparse.Static(sparsity=0.5)})
    sparsity.add("fc2.*", cstorch.sparse.Static(sparsity=0.25))
    model.apply(sparsity); optimizer.apply(sparsity)
"""

from dataclasses import dataclass
from typing import Callable, Dict, Optional, Union

import torch

from csadmin.errors import InvalidArgument

from ..utils.utils import convert_glob_to_regex
from .base import SparsityAlgorithm


class Group(SparsityAlgorithm):
    """`groups`: filter -> algorithm, each added in turn (see `add`)."""

    @dataclass
    class Filter:
        """One group: which parameters (name, tensor) -> bool, and their algorithm."""

        filter: Callable[[str, torch.Tensor], bool]
        algorithm: SparsityAlgorithm

    def __init__(self, groups: Dict[str, SparsityAlgorithm] = None):
        super().__init__(sparsity=None)
        self._groups = []
        for group_filter, algorithm in (groups or {}).items():
            self.add(group_filter, algorithm)

    @property
    def num_sparse_params(self) -> int:
        return sum(group.algorithm.num_sparse_params for group in self._groups)

    @property
    def sparsity(self):
        """A group has no level of its own: its algorithms do (`group[0].sparsity_level`)."""
        raise InvalidArgument("Group sparsity algorithm does not have a sparsity level. You can access the sparsity "
                              "of nested sparsity algorithms by indexing the Group object, i.e. group[0].sparsity")

    def __getitem__(self, index) -> SparsityAlgorithm:
        return self._groups[index].algorithm

    def __len__(self) -> int:
        return len(self._groups)

    def add(self, filter: Union[str, list, Callable], algorithm: SparsityAlgorithm) -> None:
        """Add `algorithm` for the parameters `filter` picks: a glob or a list of globs over the
        parameter names ("*.weight", "fc1.*"), or a function (name, tensor) -> bool."""
        if not isinstance(algorithm, SparsityAlgorithm) or isinstance(algorithm, Group):
            raise InvalidArgument(f"A sparsity group's algorithm is a SparsityAlgorithm other than a Group, not a "
                                  f"{type(algorithm).__name__}.", hint="Merge groups with extend().")
        if isinstance(filter, str):
            filter = [filter]
        if isinstance(filter, (list, tuple)):
            patterns = [convert_glob_to_regex(f) for f in filter]
            self._groups.append(Group.Filter(lambda name, _: any(p.match(name) for p in patterns), algorithm))
        elif callable(filter):
            self._groups.append(Group.Filter(filter, algorithm))
        else:
            raise InvalidArgument(f"filter must be a string or callable, got {type(filter).__name__}")

    def extend(self, group: "Group") -> None:
        """Add every filter and algorithm of another group."""
        if not isinstance(group, Group):
            raise InvalidArgument(f"group must be an instance of Group, got {type(group).__name__}")
        for g in group._groups:
            self._groups.append(g)

    def sparsify_parameter(self, module, name, param) -> None:
        for group in self._groups:
            if group.filter(name, param):
                group.algorithm.sparsify_parameter(module, name, param)
                self.sparse_params.update(group.algorithm.sparse_params)
                return

    def sparsify_module(self, module) -> None:
        if not self._groups:
            raise InvalidArgument("No groups were added to the Group sparsity algorithm")
        super().sparsify_module(module)

    def _forward_pre_hook(self, module, args) -> None:
        for group in self._groups:
            group.algorithm._forward_pre_hook(module, args)

    def update(self, optimizer: Optional[torch.optim.Optimizer] = None) -> None:
        for group in self._groups:
            group.algorithm.update(optimizer)

    def register_target_sparsity_hook(self, hook):
        return [group.algorithm.register_target_sparsity_hook(hook) for group in self._groups]

    def register_computed_sparsity_hook(self, hook):
        return [group.algorithm.register_computed_sparsity_hook(hook) for group in self._groups]

    def visit_state(self, f) -> None:
        for group in self._groups:
            group.algorithm.visit_state(f)

    def state_dict(self) -> list:
        return [group.algorithm.state_dict() for group in self._groups]

    def load_state_dict(self, state_dict) -> None:
        states = [state_dict] if isinstance(state_dict, dict) else state_dict
        if not isinstance(states, list) or len(states) != len(self._groups):
            raise InvalidArgument(f"Expected a list of {len(self._groups)} state_dicts for the Group sparsity "
                                  f"algorithm but got {len(states) if isinstance(states, list) else states!r}.")
        for state, group in zip(states, self._groups):
            group.algorithm.load_state_dict(state)
