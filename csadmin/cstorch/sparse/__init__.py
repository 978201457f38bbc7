"""cstorch.sparse: weight sparsity as the real package's CPU backend applies it (dense weights
times bool masks, pruned around every forward and optimizer step; see base.py), for what
ModelZoo's sparsity callback and configs name. Static sparsity is built (`Static`, `Group`,
`configure`); the dynamic algorithms (`GMP`, `SET`, `RigL`) are refused when built, naming
what is built (dynamic.py). docs/cstorch/sparsity.md.
"""

from . import utils
from .base import SparsityAlgorithm
from .configure import configure, default_sparse_param_filter, map_sparsity_algorithm
from .dynamic import GMP, SET, DynamicSparsityAlgorithm, RigL
from .group import Group
from .static import Static

__all__ = ["SparsityAlgorithm", "configure", "map_sparsity_algorithm", "default_sparse_param_filter",
           "DynamicSparsityAlgorithm", "GMP", "Group", "RigL", "SET", "Static", "utils"]
