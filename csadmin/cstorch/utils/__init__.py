"""cstorch.utils: the DataLoader that feeds a run (cstorch.utils.data)."""

from . import data

__all__ = ["data"]
