"""R1.8's `cerebras_pytorch.utils.extract_loss`: the loss among a model's outputs."""

from __future__ import annotations

import torch

from csadmin.errors import InvalidArgument


def extract_loss(model_outputs):
    """The loss of `model_outputs`: the tensor itself, the first of a list or tuple, or the
    `.loss` attribute of an output object (transformers' ModelOutput); InvalidArgument otherwise."""
    if isinstance(model_outputs, torch.Tensor):
        return model_outputs
    if isinstance(model_outputs, (list, tuple)) and model_outputs:
        return model_outputs[0]
    if hasattr(model_outputs, "loss"):
        return model_outputs.loss
    raise InvalidArgument(f"extract_loss: cannot find the loss in outputs of type {type(model_outputs).__name__}.",
                          "Return the loss tensor, a list or tuple starting with it, or an object with .loss.")
