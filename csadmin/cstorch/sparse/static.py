"""cstorch.sparse.Static: sparsity whose masks never change (the real class): each chosen weight
is pruned to `sparsity` once, by the init method, and stays so while training."""

from typing import Optional

from csadmin.errors import InvalidArgument

from .base import SparsityAlgorithm


class Static(SparsityAlgorithm):
    """`sparsity`: a float in [0, 1) (a schedule is the dynamic algorithms', refused here as the
    real class refuses it); other keywords (`init_method`) go to SparsityAlgorithm."""

    def __init__(self, sparsity: Optional[float] = None, **kwargs):
        if sparsity is not None and not isinstance(sparsity, float):
            raise InvalidArgument("Static sparsity algorithm only supports constant sparsity",
                                  hint="Give sparsity as a float in [0, 1), e.g. 0.5.")
        if sparsity is not None and not 0.0 <= sparsity < 1.0:
            raise InvalidArgument(f"Invalid sparsity level {sparsity}. Must be 0.0 <= s < 1.0")
        super().__init__(sparsity, **kwargs)

    def update(self, optimizer=None) -> None:
        """Nothing changes; the level is reported to the target and computed sparsity hooks."""
        for hook in list(self._target_sparsity_hooks.values()):
            hook(self, "*", self.sparsity_level)
        for hook in list(self._computed_sparsity_hooks.values()):
            hook(self, "*", self.sparsity_level)
