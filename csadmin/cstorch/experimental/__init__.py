"""cstorch.experimental (2.x): the real package's features under development that ModelZoo 2.10's
trainer reaches: `listener` (hooks on the tensors a traced step makes). The real module's
autoregressive implicit loops and weight Compression (inference and compression callbacks, off
the fit path) are not built. R1.8 scripts' `import cerebras_pytorch.experimental as cstorch` is
another module, the whole API (`python -m csadmin.cstorch` registers it; core/r18)."""

from . import listener

__all__ = ["listener"]
