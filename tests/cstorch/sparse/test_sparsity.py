"""cstorch.sparse as ModelZoo's sparsity callback uses it: configure a Group from its config,
`model.apply(sparsity)` (a compiled model's apply takes it) and `optimizer.apply(sparsity)`, then
train: the chosen weights, their gradients and their optimizer state stay pruned by their masks,
the masks travel in the model's state dict, and what is not built is refused by name."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin.errors import InvalidArgument, InvalidState


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.embedding = torch.nn.Embedding(10, 8)
        self.fc1 = torch.nn.Linear(8, 16)
        self.norm = torch.nn.LayerNorm(16)
        self.fc2 = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.norm(torch.relu(self.fc1(self.embedding(x).mean(1)))))


def _train(sparsity, steps=5, optimizer_cls=cstorch.optim.Adam):
    cstorch.backend("CPU")
    net = Net()
    compiled = cstorch.compile(net)
    net.apply(sparsity)
    optimizer = optimizer_cls(net.parameters(), lr=0.05)
    optimizer.apply(sparsity)
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x, y = torch.randint(0, 10, (16, 3), generator=g), torch.randint(0, 4, (16,), generator=g)
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(compiled(x), y).backward()
        optimizer.step()
    return net, optimizer


def test_a_number_is_static_sparsity_over_the_default_parameters():
    start = Net()
    net, optimizer = _train(cstorch.sparse.configure(0.5))
    masks = {name: buffer for name, buffer in net.named_buffers() if name.endswith("_mask")}
    assert sorted(masks) == ["fc1.weight_mask", "fc2.weight_mask"]  # not biases, the embedding or the norm
    for name, mask in masks.items():
        weight = net.get_parameter(name[:-len("_mask")])
        assert mask.dtype == torch.bool and int(mask.sum()) == weight.numel() // 2
        assert torch.all(weight[~mask] == 0) and torch.all(weight[mask] != 0)
        assert torch.all(optimizer.state[weight]["exp_avg"][~mask] == 0)
        assert torch.all(optimizer.state[weight]["exp_avg_sq"][~mask] == 0)
    assert not torch.equal(net.fc1.weight, start.fc1.weight)  # it trained
    assert "fc1.weight_mask" in net.state_dict()


def test_param_filter_globs_and_topk_init_keep_the_largest_weights():
    cstorch.backend("CPU")
    net = Net()
    before = net.fc2.weight.detach().clone()
    sparsity = cstorch.sparse.configure({"sparsity": 0.75, "init_method": "topk", "param_filter": "fc2.*"})
    cstorch.compile(net)
    net.apply(sparsity)
    # a filter given replaces the default one: the glob picks the bias too, as the real package's does
    assert [name for name, _ in net.named_buffers()] == ["fc2.weight_mask", "fc2.bias_mask"]
    kept = before.abs().flatten().topk(before.numel() // 4).indices
    assert sorted(net.fc2.weight_mask.flatten().nonzero().flatten().tolist()) == sorted(kept.tolist())


def test_a_gradient_is_masked_as_backward_makes_it():
    cstorch.backend("CPU")
    net = Net()
    compiled = cstorch.compile(net)
    net.apply(cstorch.sparse.configure({"sparsity": 0.5, "param_filter": ["fc1.weight"]}))
    torch.nn.functional.cross_entropy(compiled(torch.randint(0, 10, (4, 3))), torch.arange(4)).backward()
    assert torch.all(net.fc1.weight.grad[~net.fc1.weight_mask] == 0)
    assert torch.count_nonzero(net.fc1.weight.grad) > 0


def test_the_hooks_hear_the_static_level_after_each_step():
    heard = []
    sparsity = cstorch.sparse.configure([{"sparsity": 0.25, "param_filter": "fc1.weight"},
                                         {"sparsity": 0.5, "param_filter": "fc2.weight"}])
    sparsity.register_target_sparsity_hook(lambda algorithm, name, target: heard.append((name, target)))
    _train(sparsity, steps=2, optimizer_cls=cstorch.optim.SGD)
    assert heard == [("*", 0.25), ("*", 0.5)] * 2
    assert len(sparsity) == 2 and sparsity[1].sparsity_level == 0.5 and sparsity.state_dict() == [{}, {}]


def test_a_checkpoints_masks_are_restored_into_a_sparsified_model():
    net, _ = _train(cstorch.sparse.configure(0.5), steps=1)
    twin = Net()
    cstorch.sparse.configure({"sparsity": 0.5, "init_method": "checkerboard"}).apply(twin)
    twin.load_state_dict(net.state_dict())
    assert torch.equal(twin.fc1.weight_mask, net.fc1.weight_mask)


@pytest.mark.parametrize("config, message", [
    ({"sparsity": 0.5, "algorithm": "gmp"}, "The GMP sparsity algorithm .dynamic sparsity. is not built here"),
    ({"sparsity": 0.9, "algorithm": "rigl", "drop_fraction": 0.3}, "The RigL sparsity algorithm"),
    ({"sparsity": 0.9, "algorithm": "SET"}, "The SET sparsity algorithm"),
    ({"sparsity": 0.5, "algorithm": "wanda"}, r"Unsupported sparsity algorithm: wanda. Supported types: \['gmp', "
                                              r"'rigl', 'set', 'static'\]"),
    ({"sparsity": 1.0}, "Invalid sparsity level 1.0"),
    ({"sparsity": [0.1, 0.2]}, "Static sparsity algorithm only supports constant sparsity"),
    ({"sparsity": 0.5, "schedule": 0.5}, "Cannot specify both 'sparsity' and 'schedule'"),
    ({"sparsity": 0.5, "init_method": "lottery"}, "Unknown sparsity init_method 'lottery'"),
])
def test_what_is_not_built_or_malformed_is_refused_by_name(config, message):
    with pytest.raises(InvalidArgument, match=message):
        cstorch.sparse.configure(config)


def test_a_filter_that_matches_nothing_and_an_optimizer_alone_are_refused():
    cstorch.backend("CPU")
    with pytest.raises(InvalidArgument, match="No parameters were sparsified"):
        cstorch.sparse.configure({"sparsity": 0.5, "param_filter": "decoder.*"}).apply(Net())
    net = Net()
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)
    optimizer.apply(cstorch.sparse.configure(0.5))
    net(torch.zeros(1, 3, dtype=torch.long)).sum().backward()
    with pytest.raises(InvalidState, match=r"model.apply\(sparsity\) was not"):
        optimizer.step()


def test_default_filter_and_the_real_names():
    f = cstorch.sparse.default_sparse_param_filter
    assert f("h.0.attn.proj_q_dense_layer.weight", torch.zeros(4, 4))
    assert not f("h.0.norm1.weight", torch.zeros(4, 4)) and not f("lm_head.weight", torch.zeros(4, 4))
    assert not f("fc.bias", torch.zeros(4))
    assert cstorch.sparse.map_sparsity_algorithm("Static") is cstorch.sparse.Static
    assert issubclass(cstorch.sparse.GMP, cstorch.sparse.DynamicSparsityAlgorithm)
