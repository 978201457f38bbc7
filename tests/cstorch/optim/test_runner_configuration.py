"""The optimizer as R1.8's runner configures it, against a real csd: configure_optimizer takes the
runner's whole `optimizer:` configuration (its keys mapped to the optimizer's own, those of the
grad scaler, the clipping and the summaries accepted), configure_lr_scheduler takes its
learning_rate (None: no schedule), and optimizer_step takes max_gradient_value, the product's
spelling of max_gradient_val. The compiled run equals the same training spelled with the
document's names, run eagerly."""

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.optim import AdamW, configure_lr_scheduler, configure_optimizer
from tests.cstorch.helpers import batches, configure, eagerly, model, run_record

RUNNER_OPTIMIZER = {
    "optimizer_type": "AdamW",
    "learning_rate": {"scheduler": "Linear", "initial_learning_rate": 0.02, "end_learning_rate": 0.002,
                      "total_iters": 10},
    "weight_decay_rate": 0.1, "beta1": 0.8, "beta2": 0.95, "eps": 1e-6, "correct_bias": True,
    "max_gradient_value": 0.05, "loss_scaling_factor": "dynamic", "log_summaries": False,
}


def _train(optimizer, scheduler, net, step_fn_decorator, **clip):
    scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

    def training_step(x, y):
        loss = torch.nn.functional.cross_entropy(net(x), y)
        cstorch.amp.optimizer_step(loss, optimizer, scaler, **clip)
        scheduler.step()
        return loss

    step = step_fn_decorator(training_step)
    return [step(x, y) for x, y in batches(6)]


def test_the_runners_optimizer_configuration_trains_as_the_documents_names_do(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    net = model()
    compiled = cstorch.compile(net, backend="WSE_WS")
    optimizer_params = dict(RUNNER_OPTIMIZER)
    optimizer = configure_optimizer(optimizer_type=optimizer_params.pop("optimizer_type"), params=net.parameters(),
                                    **optimizer_params)
    lr_scheduler = configure_lr_scheduler(optimizer, optimizer_params.get("learning_rate"))
    group = optimizer.param_groups[0]
    assert isinstance(optimizer, AdamW)
    assert (group["weight_decay"], group["betas"], group["eps"]) == (0.1, (0.8, 0.95), 1e-6)
    losses = _train(optimizer, lr_scheduler, compiled, cstorch.compile_step,
                    max_gradient_norm=optimizer_params.get("max_gradient_norm"),
                    max_gradient_value=optimizer_params.get("max_gradient_value"))
    assert run_record(ws_csd)["mode"] == "train"
    assert max(p.grad.abs().max().item() for p in net.parameters()) == pytest.approx(0.05)  # clipped by value

    reference = model()  # the same, with the document's names, eagerly
    ref_optimizer = AdamW(reference.parameters(), betas=(0.8, 0.95), eps=1e-6, weight_decay=0.1)
    ref_scheduler = cstorch.optim.lr_scheduler.LinearLR(ref_optimizer, initial_learning_rate=0.02,
                                                        end_learning_rate=0.002, total_iters=10)
    ref_losses = _train(ref_optimizer, ref_scheduler, reference, eagerly, max_gradient_val=0.05)
    assert [a.item() for a in losses] == [b.item() for b in ref_losses]
    for ours, theirs in zip(net.parameters(), reference.parameters()):
        assert torch.equal(ours, theirs)
    assert configure_lr_scheduler(optimizer, None) is None  # a configuration without learning_rate: no schedule


def test_only_keys_with_no_meaning_are_refused(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    params = list(model().parameters())
    sgd = configure_optimizer("SGD", params, learning_rate=0.05, weight_decay_rate=0.01, momentum=0.9,
                              max_gradient_norm=1.0, loss_scaling_factor=1.0, log_summaries=True)
    assert (sgd.param_groups[0]["lr"], sgd.param_groups[0]["weight_decay"]) == (0.05, 0.01)
    with pytest.raises(errors.InvalidArgument) as exc:
        configure_optimizer("Adam", params, learning_rate=0.01, momentum=0.9)
    assert exc.value.message.startswith("Adam does not take 'momentum'; it takes lr, betas, eps, weight_decay, amsgrad, "
                                        "correct_bias (and a runner's learning_rate, weight_decay_rate, beta1, beta2, "
                                        "max_gradient_norm, ")
    with pytest.raises(errors.InvalidArgument, match="learning_rate and lr are one parameter, given twice"):
        configure_optimizer("SGD", params, learning_rate=0.05, lr=0.05)
    # correct_bias is AdamW's own (False: BERT's Adam, no bias correction), as the runner passes it
    assert configure_optimizer("AdamW", params, correct_bias=False).param_groups[0]["correct_bias"] is False
    with pytest.raises(errors.InvalidArgument, match="SGD does not take 'correct_bias'"):
        configure_optimizer("SGD", params, correct_bias=True)
    with pytest.raises(errors.InvalidArgument, match="max_gradient_val and max_gradient_value are one parameter"):
        cstorch.amp.optimizer_step(torch.zeros((), requires_grad=True), sgd, None, max_gradient_val=1.0,
                                   max_gradient_value=1.0)
