"""`cstorch.nn.functional`: the real module's functions (ModelZoo 2.10's mixture-of-experts layers
call `sparse_act_matmul`, its router and the Eleuther harness `one_hot`).

On the system most of these map to kernels of its own (cirh ops) that skip the rows, columns or
tokens a mask or count rules out; off the system the real functions compute the same values with
torch ops. Only the values are the contract, so here each is those torch ops, on every backend: a
captured step holds them like any other op. The kernels' autograd wrappers (CSXSparseActMatMul,
CSXMeshShard, ...) are the system's compiler operations: asking for one is refused, naming it
(cirh.NotBuilt: INVALID_STATE, and an AttributeError for code that probes with hasattr).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from csadmin.errors import InvalidArgument

from ..cirh import NotBuilt

# The scope boundaries' kinds, as the real module names them.
BEGIN_FORWARD = "BEGIN_FORWARD"
BEGIN_BACKWARD = "BEGIN_BACKWARD"
END_FORWARD = "END_FORWARD"
END_BACKWARD = "END_BACKWARD"
SKIP_OPTIONAL_ATTR = "SKIP_OPTIONAL_ATTR"


def one_hot(array: torch.Tensor, num_classes: int) -> torch.Tensor:
    """`array`'s classes as one-hot int32 vectors along a new last dimension of `num_classes`
    (the real function: a scatter into zeros, so it traces as static shapes; torch's one_hot
    gives int64 and may infer the class count, this one needs it)."""
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise InvalidArgument(f"one_hot: num_classes must be a whole number ≥ 1 (it cannot be inferred in a "
                              f"compiled step); got {num_classes!r}.")
    zeros = torch.zeros(array.shape + (num_classes,), device=array.device, dtype=torch.int)
    return zeros.scatter_(-1, array.unsqueeze(-1), 1)


def scope_boundary(input: torch.Tensor, boundary_type: str, scope_name: str) -> torch.Tensor:
    """Mark a scope's boundary after `input` for the system's compiler; the value is `input`."""
    if boundary_type not in (BEGIN_FORWARD, BEGIN_BACKWARD, END_FORWARD, END_BACKWARD):
        raise InvalidArgument(f"scope_boundary: {boundary_type!r} is not a boundary type.",
                              hint="Use BEGIN_FORWARD, BEGIN_BACKWARD, END_FORWARD or END_BACKWARD.")
    return input


def enter_scope(input: torch.Tensor, scope_name: str) -> torch.Tensor:
    """Where the scope `scope_name` begins (forward) and ends (backward): `input` itself."""
    return input


def exit_scope(input: torch.Tensor, scope_name: str) -> torch.Tensor:
    """Where the scope `scope_name` ends (forward) and begins (backward): `input` itself."""
    return input


def sparse_matmul(input_values: torch.Tensor, input_indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The product of a sparse input and a dense weight, kept sparse.

    input_values (..., M, b, N) are the b present slices of a dense (..., M, B, N) input, at
    input_indices (..., M, b) along its B dimension; weight is (K, B, N). Returns (..., M, b, K):
    the dense product `einsum("...MBN, KBN -> ...MBK")` at the same indices."""
    full = weight.shape[-2]
    if full >= 2 ** 16:
        raise InvalidArgument(f"sparse_matmul: the weight's sparse dimension is {full}; its indices must fit in "
                              "uint16 (under 65536).")
    at = input_indices.unsqueeze(-1)
    dense = input_values.new_zeros((*input_values.shape[:-2], full, input_values.shape[-1]))
    dense = dense.scatter(-2, at.expand(input_values.shape), input_values)
    product = torch.einsum("...MBN, KBN -> ...MBK", dense, weight)
    return product.gather(-2, at.expand((*input_values.shape[:-1], weight.shape[0])))


def sparse_act_matmul(input_value: torch.Tensor, input_mask: torch.Tensor, weight: torch.Tensor,
                      dense_capacity: Optional[int] = None) -> torch.Tensor:
    """`input_value` (..., M, N) times `weight` (K, N) transposed, for the rows `input_mask`
    (..., M) keeps (non-zero); the other rows of the (..., M, K) result are zero.
    `dense_capacity` (the most rows kept) only sizes the system's kernel."""
    if input_value.shape[:-1] != input_mask.shape:
        raise InvalidArgument(f"sparse_act_matmul: input_value {tuple(input_value.shape)} and input_mask "
                              f"{tuple(input_mask.shape)} must have the same shape but for input_value's last "
                              "dimension.")
    product = torch.einsum("...MN, KN -> ...MK", input_value, weight)
    return product * input_mask.unsqueeze(-1).to(product.dtype)


def bias_add(input_value: torch.Tensor, bias: torch.Tensor, dim: int) -> torch.Tensor:
    """`input_value` plus the 1-D `bias`, broadcast along dimension `dim` of it."""
    if bias.dim() != 1 or input_value.dim() < 2:
        raise InvalidArgument(f"bias_add: takes a 1-D bias and an input of 2 or more dimensions; got bias "
                              f"{tuple(bias.shape)}, input {tuple(input_value.shape)}.")
    if not 0 <= dim < input_value.dim() or input_value.shape[dim] != bias.shape[0]:
        raise InvalidArgument(f"bias_add: dimension {dim} of the input {tuple(input_value.shape)} must have the "
                              f"bias's {bias.shape[0]} entries.")
    shape = [1] * input_value.dim()
    shape[dim] = bias.shape[0]
    return input_value + bias.view(shape)


def matmul(weight: torch.Tensor, input_value: torch.Tensor,
           weight_transposed: Optional[torch.Tensor] = None) -> torch.Tensor:
    """`weight` (Ho, Hi) times `input_value` (Hi, S). `weight_transposed`, when given, is the
    weight's transpose the system's backward pass reads; it must have that shape."""
    _check_weight(weight, weight_transposed, "matmul")
    if input_value.dim() != 2 or weight.shape[1] != input_value.shape[0]:
        raise InvalidArgument(f"matmul: takes a (Ho, Hi) weight and a (Hi, S) input; got {tuple(weight.shape)} "
                              f"and {tuple(input_value.shape)}.")
    return torch.matmul(weight, input_value)


def ranged_matmul(weight: torch.Tensor, input_value: torch.Tensor, num_cols: torch.Tensor,
                  weight_transposed: Optional[torch.Tensor] = None) -> torch.Tensor:
    """`input_value` (B, S, Hi) times `weight` (Ho, Hi) transposed: (B, S, Ho). The system reads
    only the first num_cols[b] rows of each batch entry b and leaves the others undefined; here
    every row is computed."""
    _check_weight(weight, weight_transposed, "ranged_matmul")
    if input_value.dim() != 3 or weight.shape[1] != input_value.shape[2] or num_cols.dim() != 1:
        raise InvalidArgument(f"ranged_matmul: takes a (Ho, Hi) weight, a (B, S, Hi) input and (B) num_cols; got "
                              f"{tuple(weight.shape)}, {tuple(input_value.shape)} and {tuple(num_cols.shape)}.")
    return torch.einsum("...MN, KN -> ...MK", input_value, weight)


def _check_weight(weight: torch.Tensor, weight_transposed: Optional[torch.Tensor], name: str) -> None:
    if weight.dim() != 2:
        raise InvalidArgument(f"{name}: the weight must be 2-D; got {tuple(weight.shape)}.")
    if weight_transposed is not None and tuple(weight_transposed.shape) != tuple(weight.shape[::-1]):
        raise InvalidArgument(f"{name}: weight_transposed {tuple(weight_transposed.shape)} is not the shape of the "
                              f"weight's transpose {tuple(weight.shape[::-1])}.")


def conditional_arange(mask: torch.Tensor, start: torch.Tensor, step: torch.Tensor,
                       dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """start, start + step, ... at the places `mask` is non-zero along its last dimension, in
    order; -1 elsewhere (the real function's filler: the system leaves them undefined)."""
    if start.dim() != 0 or step.dim() != 0:
        raise InvalidArgument(f"conditional_arange: start and step must be 0-D tensors; got {tuple(start.shape)} "
                              f"and {tuple(step.shape)}.")
    keep = mask.bool()
    values = start + step * (torch.cumsum(keep, dim=-1) - 1)
    result = torch.where(keep, values, torch.full_like(values, -1))
    return result if dtype is None else result.to(dtype)


def nth_order_statistic(input: torch.Tensor, k: int, dimension: int) -> torch.Tensor:
    """An int16 mask of `input`'s shape: 1 where the element is among the k largest along
    `dimension`, 0 elsewhere."""
    if not 0 <= dimension < input.dim() or not 0 < k <= input.shape[dimension]:
        raise InvalidArgument(f"nth_order_statistic: needs 0 ≤ dimension < {input.dim()} and 0 < k ≤ the "
                              f"dimension's size; got k={k}, dimension={dimension} for {tuple(input.shape)}.")
    top = input.topk(k, dim=dimension).indices
    return torch.zeros_like(input, dtype=torch.int16).scatter(dimension, top, torch.ones_like(top, dtype=torch.int16))


def unbind(tensor: torch.Tensor) -> Tuple[torch.Tensor, ...]:
    """`tensor`'s slices along its first dimension (the gradients stack back)."""
    return torch.unbind(tensor, dim=0)


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise NotBuilt(f"cstorch.nn.functional.{name} is not built here: the real module's CSX classes wrap the "
                   "system's compiler operations (torch.ops.cirh).",
                   hint="Call the module's functions (sparse_act_matmul, bias_add, ...): they compute the same values.")
