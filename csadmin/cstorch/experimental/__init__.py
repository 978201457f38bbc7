"""cstorch.experimental (2.x): the real package's features under development that ModelZoo 2.10's
trainer reaches: `listener` (hooks on the tensors a traced step makes) and `Compression` (weights
marked for a compressed storage format). The real module's autoregressive implicit loops
(inference, off the fit path) are not built. R1.8 scripts' `import cerebras_pytorch.experimental as cstorch` is
another module, the whole API (`python -m csadmin.cstorch` registers it; core/r18)."""

from . import listener
from .compression import Compression

__all__ = ["listener", "Compression"]
