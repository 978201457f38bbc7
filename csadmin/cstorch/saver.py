"""`cstorch.saver`: the later releases' module of checkpoint saving and loading, by the name
scripts reach it (`cstorch.saver.save(...)`, `from cerebras.pytorch.saver import load`).

It holds no code of its own: `save` and `load` are cstorch.save and cstorch.load
(storage/checkpoint.py: HDF5 checkpoints), and the one-value tensor factories the real package
defines beside them (`full`, `ones`, `zeros` and their `_like`s) are utils/tensor.py's.
"""

from .storage.checkpoint import load, save
from .utils.tensor import full, full_like, ones, ones_like, zeros, zeros_like

__all__ = ["save", "load", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like"]
