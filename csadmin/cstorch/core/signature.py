"""What a compiled step was compiled for, and what differs when a call does not match it.

The fabric runs one static program per run (001: the graph is static and the system is never
reprogrammed), so a step called with batches of another shape or dtype, or with another
non-tensor argument (another model, another flag), would need another program: refused with
ReprogramForbidden saying exactly what changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils._pytree import tree_flatten

from csadmin.errors import ReprogramForbidden


def _describe(value) -> str:
    if isinstance(value, torch.nn.Module):
        return f"<{type(value).__name__} model at {id(value):#x}>"
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


@dataclass(frozen=True)
class Signature:
    """The structure of a step's arguments and, per leaf, a tensor's (shape, dtype) or the value."""

    spec: object
    leaves: tuple

    @classmethod
    def of(cls, args: tuple, kwargs: dict) -> tuple["Signature", list[torch.Tensor]]:
        flat, spec = tree_flatten((args, kwargs))
        leaves = tuple(
            ("tensor", tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else ("value", x) for x in flat)
        return cls(spec, leaves), [x for x in flat if isinstance(x, torch.Tensor)]

    @property
    def batch_size(self) -> int:
        """Samples per step: the leading dimension of the first tensor argument (1 if none)."""
        for leaf in self.leaves:
            if leaf[0] == "tensor":
                return leaf[1][0] if leaf[1] else 1
        return 1

    def tensors(self, args: tuple, kwargs: dict, step: str) -> list[torch.Tensor]:
        """The tensor leaves of a call's arguments; raises ReprogramForbidden if the call does
        not match this signature."""
        flat, spec = tree_flatten((args, kwargs))
        if spec != self.spec or len(flat) != len(self.leaves):
            self._refuse(step, "the arguments' structure changed "
                                    f"({len(self.leaves)} leaves → {len(flat)}: {spec} vs {self.spec})")
        out = []
        for i, (x, leaf) in enumerate(zip(flat, self.leaves)):
            if leaf[0] == "tensor":
                if not isinstance(x, torch.Tensor):
                    self._refuse(step, f"argument leaf {i}: a tensor → {_describe(x)}")
                if tuple(x.shape) != leaf[1] or x.dtype != leaf[2]:
                    self._refuse(step, self._tensor_change(i, leaf, x))
                out.append(x)
            elif isinstance(x, torch.Tensor) or not (x is leaf[1] or _same(x, leaf[1])):
                self._refuse(step, f"argument leaf {i}: {_describe(leaf[1])} → {_describe(x)}")
        return out

    def _tensor_change(self, i: int, leaf: tuple, x: torch.Tensor) -> str:
        (_, shape, dtype) = leaf
        if x.dtype != dtype:
            return f"tensor {i}: dtype {str(dtype).replace('torch.', '')} → {str(x.dtype).replace('torch.', '')}"
        if shape and x.dim() == len(shape) and tuple(x.shape[1:]) == shape[1:]:
            return (f"batch size {shape[0]} → {x.shape[0]}: batch with drop_last=True "
                    f"(tensor {i}: shape {tuple(shape)} → {tuple(x.shape)})")
        return f"tensor {i}: shape {tuple(shape)} → {tuple(x.shape)}"

    @staticmethod
    def _refuse(step: str, what: str):
        raise ReprogramForbidden(
            f"The {step} was called with a step that would need another "
            f"program: {what}. The fabric is programmed once per run and cannot be reprogrammed.",
            "Give every step the same batch shape, dtype and non-tensor arguments; run a different "
            "program in a separate process (one run per process).",
        )


def _same(a, b) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # objects whose == is not a truth value: only identity counts
        return False
