"""cstorch.nn (2.x) as ModelZoo 2.10 reaches it: functional.one_hot (its mixture-of-experts
router), the loss modules under the real names (torch's numbers), SelectiveGrad refused by name,
and R1.8's cerebras_pytorch.nn left R1.8's under `python -m csadmin.cstorch`; and
cstorch.lib.cerebras_pytorch_lib.set_attribute, which its decoder layers call."""

import sys

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.__main__ import alias_modules
from csadmin.errors import InvalidArgument


def test_one_hot_is_int32_over_a_new_last_dimension():
    classes = torch.tensor([[0, 2], [1, 1]])
    out = cstorch.nn.functional.one_hot(classes, num_classes=3)
    assert out.dtype == torch.int32 and out.shape == (2, 2, 3)
    assert torch.equal(out.long(), torch.nn.functional.one_hot(classes, 3))
    with pytest.raises(InvalidArgument, match="num_classes must be a whole number ≥ 1"):
        cstorch.nn.functional.one_hot(classes, -1)


def test_the_losses_compute_torchs_numbers_and_selective_grad_is_refused():
    x, y = torch.randn(5, 3), torch.randn(5, 3)
    assert torch.equal(cstorch.nn.SmoothL1Loss(beta=0.5)(x, y), torch.nn.SmoothL1Loss(beta=0.5)(x, y))
    assert isinstance(cstorch.nn.CrossEntropyLoss(), torch.nn.Module)
    with pytest.raises(InvalidArgument, match=r"cstorch.nn.SelectiveGrad \(selective gradient updates\) is not built"):
        cstorch.nn.SelectiveGrad("fc.*")


def test_r18s_nn_stays_r18s_and_2xs_is_ours():
    before = set(sys.modules)
    try:
        alias_modules()
        assert hasattr(sys.modules["cerebras_pytorch.nn"], "Scope")
        assert sys.modules["cerebras.pytorch.nn"] is cstorch.nn
        assert sys.modules["cerebras.pytorch.nn.functional"] is cstorch.nn.functional
    finally:  # this process runs other tests, which must not find the aliases
        for name in set(sys.modules) - before:
            if name.split(".")[0] in ("cerebras", "cerebras_pytorch", "cerebras_appliance"):
                del sys.modules[name]


def test_set_attribute_keeps_the_compiler_attribute_on_the_tensor_and_changes_nothing():
    """ModelZoo's decoder layers mark their outputs for numeric validation on CSX."""
    lib = cstorch.lib.cerebras_pytorch_lib
    t = torch.ones(2)
    lib.set_attribute(t, "cs.internal", {"source_vars": ["layer0.attn.fwd"]})
    assert t.cs_attributes == {"cs.internal": {"source_vars": ["layer0.attn.fwd"]}} and torch.equal(t, torch.ones(2))
    with pytest.raises(InvalidArgument, match="an attribute holds a bool, int, float, str"):
        lib.set_attribute(t, "cs.internal", {"source_vars": [object()]})
