"""ModelZoo's attention layers' compiler hints, utils.kernel.kernel_annotater and
utils.num_kv_groups.groups_annotater: on CSX the decorated function runs under the annotation
(the backend's active attribute inside it, none after), its values unchanged; off the system the
function itself comes back."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.utils.kernel import KernelConfig, kernel_annotater
from csadmin.cstorch.utils.num_kv_groups import GroupsConfig, groups_annotater
from tests.cstorch.v2 import csx


def _active():
    return {cls: attribute.value for cls, (_, attribute) in cstorch.current_backend_impl().annotations.items()}


def test_on_csx_the_body_runs_under_the_hint_and_its_values_are_unchanged(ws_csd, tmp_path):
    csx(ws_csd, tmp_path)
    seen = []

    def attention(q, k):
        seen.append(_active())
        return torch.softmax(q @ k.T, dim=-1)

    q, k = torch.randn(4, 8), torch.randn(4, 8)
    hinted = groups_annotater(2)(kernel_annotater("optimized_beta")(attention))
    assert torch.equal(hinted(q, k), attention(q, k))
    assert seen[0] == {KernelConfig: "optimized_beta", GroupsConfig: 2} and _active() == {}
    kernel_annotater(None)(attention)(q, k)
    assert seen[-1] == {}  # no kernel named: no tag


def test_off_the_system_the_function_comes_back_and_bad_values_are_refused(tmp_path):
    def attention(q):
        return q

    cstorch.backend("CPU", artifact_dir=str(tmp_path))
    assert kernel_annotater("optimized_beta")(attention) is attention
    assert groups_annotater(4)(attention) is attention
    with pytest.raises(errors.InvalidArgument, match="Expected `kernel` to be <class 'str'>"):
        KernelConfig(enable_fwd=True, enable_bwd=True, kernel=3)
    with pytest.raises(errors.InvalidArgument, match="Expected `num_kv_groups` to be <class 'int'>"):
        GroupsConfig(enable_fwd=True, enable_bwd=True, num_kv_groups="2")


def test_pol_sets_the_level_current_pol_reads_inside_and_the_backends_outside(ws_csd, tmp_path):
    """ModelZoo's GPT heads run lm_head under cstorch.pol(bwd_level=0); its rotary embedding asks
    cstorch.current_pol() (>= 1 computes in the half dtype)."""
    csx(ws_csd, tmp_path)
    assert cstorch.current_pol() == 1  # the backend's optimization_level, by default
    cstorch.backends.csx.precision.optimization_level = 2
    assert cstorch.current_pol() == 2
    inner = cstorch.pol(level=0)(lambda: cstorch.current_pol())
    assert inner() == 0 and cstorch.current_pol() == 2
    head = torch.nn.Linear(4, 2)
    x = torch.randn(3, 4)
    assert torch.equal(cstorch.pol(bwd_level=0)(head)(x), head(x))  # no forward level: the backend's
    assert cstorch.pol(bwd_level=0)(lambda: cstorch.current_pol())() == 2
    with pytest.raises(errors.InvalidArgument, match="POL must be None or an integer in range \\[0, 3\\) but got "
                                                     "backward level 3"):
        cstorch.pol(bwd_level=3)
