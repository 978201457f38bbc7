"""R1.8's `cerebras_pytorch.experimental.compile`: csadmin.cstorch's compile, then the model's
parameters on the "xla" device, where R1.8's compile puts them (torch_xla's lazy tensor device)
and ModelZoo 1.8's cstorch flow asserts them right after. Their data stays on this CPU, where the
runtime computes (backend/device.py: XlaParameter, storage_device). `python -m csadmin.cstorch`
gives this compile to the package `cerebras_pytorch.experimental` only: a script importing
csadmin.cstorch or a later release's name keeps its parameters' own device."""

from __future__ import annotations

import torch

from csadmin.cstorch.backend.device import present_on_xla
from csadmin.cstorch.core.compile import CompiledModel
from csadmin.cstorch.core.compile import compile as compile_model


def compile(model: torch.nn.Module, backend=None) -> CompiledModel:
    """Prepare `model` for `backend` as cstorch.compile does; on the system (CSX), its parameters
    then answer `.device` with xla:0."""
    compiled = compile_model(model, backend)
    if compiled.backend.kind == "CSX":
        present_on_xla(model)
    return compiled
