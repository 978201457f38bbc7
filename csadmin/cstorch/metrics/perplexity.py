"""`PerplexityMetric(name)`: exp of the loss per token over every batch.

    perplexity = cstorch.metrics.PerplexityMetric("perplexity")   # R1.8: also compute_on_system=True
    perplexity(labels=labels, loss=batch_loss_sum, weights=attention_mask, dtype=None)

`loss` is the batch's **total** loss (summed over its tokens; a mean loss times the tokens it
averaged), as the real package adds it; the tokens are every label, or those of positive weight.
The value is exp(Σ loss / Σ tokens).
"""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument

import csadmin.cstorch.metrics.inputs as inputs
from .inputs import SUM
from .metric import Metric


class PerplexityMetric(Metric):
    """Perplexity over every batch since the last reset (see the module docstring)."""

    def reset(self) -> None:
        self.register_state("total_loss", torch.zeros((), dtype=SUM))
        self.register_state("total_num_tokens", torch.zeros((), dtype=SUM))
        self._dtype = None

    def update(self, labels, loss, weights=None, dtype=None) -> None:
        inputs.tensors(self.name, labels=labels)
        if isinstance(loss, torch.Tensor) and loss.numel() != 1 or not isinstance(loss, (torch.Tensor, int, float)):
            raise InvalidArgument(f"{self.name}: labels is a tensor and loss a one-element tensor (the batch's total "
                                  f"loss); got loss of shape {getattr(loss, 'shape', type(loss).__name__)}.",
                                  hint="Pass the loss summed over the batch's tokens, e.g. loss=mean_loss * "
                                       "num_tokens.")
        inputs.weights_like(self.name, labels, weights)
        inputs.into(self.total_loss, loss.reshape(()) if isinstance(loss, torch.Tensor) else loss)
        inputs.into(self.total_num_tokens, inputs.counted(weights, labels))
        self._dtype = dtype

    def compute(self) -> torch.Tensor:
        result = torch.exp(self.total_loss / self.total_num_tokens)
        return result if self._dtype is None else result.to(self._dtype)
