"""`cstorch.lib`: the real package's native library, `cerebras_pytorch_lib`, for the calls ModelZoo
2.10 makes of it (cerebras_pytorch_lib.py)."""

from . import cerebras_pytorch_lib

__all__ = ["cerebras_pytorch_lib"]
