"""cstorch.experimental (2.x): the real package's features under development that ModelZoo 2.10's
trainer reaches: `listener` (hooks on the tensors a traced step makes) and `Compression` (weights
marked for a compressed storage format). The real module's autoregressive implicit loops
(`start_implicit_loop`, `update_implicit_loop`: generation re-run on the system until a stop
sequence, off the fit path) are not built: calling one is refused, naming it;
`get_loop_iteration_slice` is the real function (a gather). R1.8 scripts' `import cerebras_pytorch.experimental as cstorch` is
another module, the whole API (`python -m csadmin.cstorch` registers it; core/r18)."""

import torch

from csadmin.errors import InvalidState

from . import listener
from .compression import Compression

NO_IMPLICIT_LOOPS = ("autoregressive implicit loops (a generation re-run on the system until a stop sequence) are "
                     "not built here")


def start_implicit_loop(input_tensor: torch.Tensor, loop_dim: int) -> torch.Tensor:
    """The real function starts an implicit loop on the system: refused here."""
    raise InvalidState(f"cstorch.experimental.start_implicit_loop: {NO_IMPLICIT_LOOPS}.",
                       hint="Generate token by token with the model's forward in a loop of your own.")


def update_implicit_loop(input_tensor, index_tensor, update_tensor, stop_sequences_tensor, start_token,
                         max_tokens=None) -> torch.Tensor:
    """The real function configures an implicit loop's update: refused here."""
    raise InvalidState(f"cstorch.experimental.update_implicit_loop: {NO_IMPLICIT_LOOPS}.",
                       hint="Generate token by token with the model's forward in a loop of your own.")


def get_loop_iteration_slice(input_tensor: torch.Tensor, index_tensor: torch.Tensor) -> torch.Tensor:
    """The real helper: `input_tensor` gathered at `index_tensor` along index_tensor's last
    dimension, the index broadcast over the input's trailing dimensions."""
    input_shape, index_shape = list(input_tensor.shape), list(index_tensor.shape)
    index = index_tensor.view(index_shape + [1] * (len(input_shape) - len(index_shape)))
    return input_tensor.gather(len(index_shape) - 1,
                               index.broadcast_to(index_shape + input_shape[len(index_shape):]).long())

__all__ = ["listener", "Compression", "start_implicit_loop", "update_implicit_loop", "get_loop_iteration_slice"]
