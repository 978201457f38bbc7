"""`cstorch.cirh`: the real package's `torch.ops.cirh`, the system's own operations its native
library registers with torch (ModelZoo's generation samples tokens with `cirh.FusedTopK` and
`cirh.FusedTopP`). They are kernels of the system's compiler with no PyTorch definition, so none
is built here: asking for any of them is refused, naming it (InvalidState, and an AttributeError
for code that probes with hasattr)."""

from csadmin.errors import InvalidState


class NotBuilt(InvalidState, AttributeError):
    """A cirh operation asked for: the system's compiler kernels are not built here."""


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotBuilt(f"cstorch.cirh.{name} is one of the system's compiler operations (torch.ops.cirh), which are not "
                   "built here.", hint="Sample with torch ops (torch.topk, torch.multinomial) instead.")
