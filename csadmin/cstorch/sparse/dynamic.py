"""cstorch.sparse's dynamic algorithms — DynamicSparsityAlgorithm and its GMP, SET and RigL — are
not built here: their masks change during training by schedules of drop and regrow fractions.
They exist under their real names and signatures, so ModelZoo's config validation knows them
(`algorithm: gmp | set | rigl`), and building one is refused with an error naming it and saying
what is built (static sparsity: `algorithm: static`, the default). docs/cstorch/sparsity.md says
so too."""

import abc
from typing import Any, Optional, Union

from csadmin.errors import InvalidArgument

from .base import SparsityAlgorithm

BUILT = ("This runtime builds static sparsity only (cstorch.sparse.Static: `algorithm: static`, the default, "
         "with a constant sparsity level); the dynamic algorithms (GMP, SET, RigL) are not built.")


class DynamicSparsityAlgorithm(SparsityAlgorithm):
    """The base of the algorithms whose masks are updated during training: building one of its
    classes is refused (InvalidArgument, a ValueError, naming it)."""

    def __init__(self, sparsity: Union[float, dict, None] = None, update: Optional[dict] = None, **kwargs):
        raise InvalidArgument(f"The {type(self).__name__} sparsity algorithm (dynamic sparsity) is not built here.",
                              hint=BUILT + " Use algorithm: static, or remove the sparsity section.")


    def update(self, optimizer=None) -> None:
        """Never runs: building the algorithm is refused."""

    @abc.abstractmethod
    def update_mask(self, p, mask, sparsity):
        """The real classes' per-parameter mask update (never runs here)."""


def _refused_update_mask(self, p, mask, sparsity):
    """Never runs: building the algorithm is refused."""


class GMP(DynamicSparsityAlgorithm):
    """Gradual magnitude pruning (refused when built)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    update_mask = _refused_update_mask


class SET(DynamicSparsityAlgorithm):
    """Sparse evolutionary training: random regrowth (refused when built)."""

    def __init__(self, drop_fraction: Any = 0.3, **kwargs):
        super().__init__(**kwargs)

    update_mask = _refused_update_mask


class RigL(DynamicSparsityAlgorithm):
    """Rigged lottery: regrowth by gradient magnitude (refused when built)."""

    def __init__(self, drop_fraction: Any = 0.3, balance_in_groups: Optional[int] = None,
                 balance_out_groups: Optional[int] = None, **kwargs):
        super().__init__(**kwargs)

    update_mask = _refused_update_mask
