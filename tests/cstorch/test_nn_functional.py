"""cstorch.nn.functional beyond one_hot (tests/cstorch/test_nn.py): the real module's functions
compute the values their contracts state (checked against the dense computation each one
abbreviates and the real docstrings' examples), refuse bad shapes with a coded error, and the CSX
kernels' wrapper classes are refused by name. ModelZoo 2.10's mixture-of-experts layers call
sparse_act_matmul: tests/zoo/test_modelzoo_210.py trains one through it on csd."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.errors import InvalidArgument, InvalidState

F = cstorch.nn.functional


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)  # the same random operands every run


def test_sparse_act_matmul_is_the_product_of_the_kept_rows_and_zero_elsewhere():
    x, w = torch.randn(2, 5, 4, requires_grad=True), torch.randn(3, 4, requires_grad=True)
    mask = torch.tensor([[1, 0, 1, 1, 0], [0, 0, 1, 0, 1]], dtype=torch.int16)
    out = F.sparse_act_matmul(x, mask, w, dense_capacity=3)
    dense = x @ w.T
    assert out.shape == (2, 5, 3)
    torch.testing.assert_close(out[mask.bool()], dense[mask.bool()])
    assert not out[~mask.bool()].any()
    out.sum().backward()  # a masked-out row takes no gradient
    assert not x.grad[~mask.bool()].any() and x.grad[mask.bool()].abs().sum() > 0
    with pytest.raises(InvalidArgument, match="must have the same shape but for input_value's last dimension"):
        F.sparse_act_matmul(x, mask[:, :4], w)


def test_sparse_matmul_is_the_dense_product_at_the_present_indices():
    b_full, values = 6, torch.randn(2, 3, 2, 4)  # (..., M, b, N): 2 of the 6 slices present
    indices = torch.tensor([[[0, 3], [1, 5], [2, 4]]] * 2)
    weight = torch.randn(7, b_full, 4)  # (K, B, N)
    dense = torch.zeros(2, 3, b_full, 4).scatter(-2, indices[..., None].expand(values.shape), values)
    expected = torch.einsum("...MBN, KBN -> ...MBK", dense, weight).gather(-2, indices[..., None].expand(2, 3, 2, 7))
    torch.testing.assert_close(F.sparse_matmul(values, indices, weight), expected)


def test_the_matmuls_and_bias_add_compute_their_dense_values_and_check_shapes():
    w, x = torch.randn(3, 4), torch.randn(4, 5)
    assert torch.equal(F.matmul(w, x), w @ x) and torch.equal(F.matmul(w, x, w.T.contiguous()), w @ x)
    with pytest.raises(InvalidArgument, match=r"weight_transposed \(3, 4\) is not the shape"):
        F.matmul(w, x, w)
    batch = torch.randn(2, 5, 4)
    torch.testing.assert_close(F.ranged_matmul(w, batch, torch.tensor([5, 2])), batch @ w.T)
    with pytest.raises(InvalidArgument, match="ranged_matmul: takes a"):
        F.ranged_matmul(w, x, torch.tensor([1]))
    bias = torch.randn(5)
    assert torch.equal(F.bias_add(batch.transpose(1, 2), bias, dim=2), batch.transpose(1, 2) + bias)
    with pytest.raises(InvalidArgument, match=r"dimension 2 of the input \(2, 5, 4\) must have the bias's 5"):
        F.bias_add(batch, bias, dim=2)


def test_conditional_arange_and_nth_order_statistic_give_the_real_docstrings_examples():
    mask = torch.tensor([0, 1, 1, 1, 0, 0, 1])
    assert F.conditional_arange(mask, torch.tensor(0), torch.tensor(1)).tolist() == [-1, 0, 1, 2, -1, -1, 3]
    assert F.conditional_arange(mask, torch.tensor(2), torch.tensor(7)).tolist() == [-1, 2, 9, 16, -1, -1, 23]
    top = F.nth_order_statistic(torch.tensor([0, 2, 3, 5, 4, 1, 6]), k=3, dimension=0)
    assert top.dtype == torch.int16 and top.tolist() == [0, 0, 0, 1, 1, 0, 1]
    with pytest.raises(InvalidArgument, match="0 < k"):
        F.nth_order_statistic(torch.zeros(3), k=4, dimension=0)


def test_scopes_pass_their_input_through_and_unbind_splits_the_first_dimension():
    x = torch.randn(3, 2)
    assert F.enter_scope(x, "s") is x and F.exit_scope(x, "s") is x
    assert F.scope_boundary(x, F.BEGIN_FORWARD, "s") is x
    with pytest.raises(InvalidArgument, match="is not a boundary type"):
        F.scope_boundary(x, "MIDDLE", "s")
    assert [t.tolist() for t in F.unbind(x)] == x.tolist()


def test_the_csx_kernel_classes_are_refused_by_name():
    with pytest.raises(InvalidState, match="cstorch.nn.functional.CSXSparseActMatMul is not built here"):
        F.CSXSparseActMatMul
    assert not hasattr(F, "CSXMeshShard")  # probing code sees an AttributeError
