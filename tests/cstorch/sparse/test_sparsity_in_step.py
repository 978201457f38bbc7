"""Static sparsity inside a real compile_step against csd: the masks' pruning (before forward, on
the gradient, on the optimizer's state before its step and on the weights after it) is part of
the captured program, so every replayed step keeps the pruned weights at zero and takes the
steps of an eager loop that masks by hand."""

import torch

import csadmin.cstorch as cstorch
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import as_the_system, batches, configure, model

STEPS = 6


def test_the_replayed_steps_keep_the_masks_and_match_an_eager_masked_loop(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model(0)
    compiled = cstorch.compile(net, backend="wse_ws")
    sparsity = cstorch.sparse.configure({"sparsity": 0.75, "param_filter": "*.weight"})
    net.apply(sparsity)
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    optimizer.apply(sparsity)

    @cstorch.compile_step
    def training_step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        return loss

    for x, y in batches(STEPS):
        training_step(x, y)
    assert process_backend.current().run.step == STEPS

    masks = {name[:-len("_mask")]: mask.clone() for name, mask in net.named_buffers()}
    assert sorted(masks) == ["0.weight", "2.weight"]
    reference = model(0)
    weights = dict(reference.named_parameters())
    twin = torch.optim.SGD(reference.parameters(), lr=0.05, momentum=0.9)
    for x, y in batches(STEPS):
        with torch.no_grad():
            for name, mask in masks.items():
                weights[name].mul_(mask)
        twin.zero_grad()
        with as_the_system():
            torch.nn.functional.cross_entropy(reference(x), y).backward()
        with torch.no_grad():
            for name, mask in masks.items():
                weights[name].grad.mul_(mask)
                if "momentum_buffer" in twin.state[weights[name]]:
                    twin.state[weights[name]]["momentum_buffer"].mul_(mask)
        twin.step()
        with torch.no_grad():
            for name, mask in masks.items():
                weights[name].mul_(mask)
    for name, p in net.named_parameters():
        torch.testing.assert_close(p, weights[name], rtol=1e-5, atol=1e-6)
        if name in masks:
            assert torch.all(p[~masks[name]] == 0) and torch.count_nonzero(p) == int(masks[name].sum())
