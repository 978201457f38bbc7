"""Ops whose output shape depends on their input's values, refused at capture (the static-graph rule).

The fabric runs one program, compiled once, for one set of shapes (001, "Static Graphs": the
compute graph must not change between iterations). `t[mask]`, `torch.nonzero`, `masked_select`,
`unique`, … make a tensor as long as the data says, so the next batch would need another program;
captured anyway, the replay would fail deep inside (a shape mismatch) or silently compute on the
first batch's shapes. `torch.compile(fullgraph=True)` stops at the same ops (a graph break on a
data-dependent output shape). The capture (capture.py) asks `data_dependent_op` of every aten op
and raises `data_dependent_error` with the user's line.
"""

from __future__ import annotations

import torch

from csadmin.errors import ReprogramForbidden

aten = torch.ops.aten

# 001, "Static Graphs".
STATIC_RULE = ("the fabric runs one static program, compiled once: the compute graph must not change "
               "between iterations, so no tensor's shape may depend on the data")

# Ops whose output shape is always data-dependent, by overload packet, as the user spells them.
_ALWAYS = {
    aten.nonzero: "torch.nonzero (also torch.where(cond) with one argument, torch.argwhere)",
    aten.nonzero_numpy: "torch.nonzero(as_tuple=True)",
    aten.masked_select: "torch.masked_select",
    aten._unique: "torch.unique",
    aten._unique2: "torch.unique",
    aten.unique_dim: "torch.unique(dim=...)",
    aten.unique_consecutive: "torch.unique_consecutive",
    aten.unique_dim_consecutive: "torch.unique_consecutive(dim=...)",
    aten.bincount: "torch.bincount",
}

_FIX = ("Keep every shape fixed: select with torch.where(mask, t, other) instead of t[mask], and reduce "
        "with a mask instead of filtering, e.g. (t * mask).sum() / mask.sum().")


def _masks(indices) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices or ())


def data_dependent_op(func, args: tuple, kwargs: dict) -> str | None:
    """How the user wrote `func` if its output shape depends on the values of its inputs, else None."""
    packet = func.overloadpacket
    if packet in _ALWAYS:
        return _ALWAYS[packet]
    if packet is aten.index and len(args) > 1 and _masks(args[1]):
        return "boolean-mask indexing t[mask]"
    if packet in (aten.index_put, aten.index_put_) and len(args) > 2 and _masks(args[1]) and args[2].numel() > 1:
        return "assigning through a boolean mask, t[mask] = values"  # one value broadcast is static
    if packet is aten.repeat_interleave and func is aten.repeat_interleave.Tensor \
            and kwargs.get("output_size") is None:
        return "torch.repeat_interleave with tensor repeats and no output_size"
    return None


def data_dependent_error(op: str, step: str, where: str) -> ReprogramForbidden:
    """The refusal of `op` at capture; `where` is ' (at file:line)' of the user's call, or ''."""
    return ReprogramForbidden(
        f"{op} inside the {step}{where} makes a tensor whose shape depends on "
        f"the data: {STATIC_RULE}.", _FIX)
