"""The R1.8 wheel's names around `cerebras_pytorch.experimental` that ModelZoo 1.8 imports
(csadmin/cstorch/core/r18/), as a script run by `python -m csadmin.cstorch` sees them, and the
spellings of ModelZoo's optimizer and schedule configurations that configure_optimizer and
configure_lr_scheduler take. These run everywhere (no ModelZoo needed); tests/zoo/test_modelzoo_r18.py
runs the library itself."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from tests.cstorch.helpers import ws_csd  # noqa: F401  (the fixture)
from tests.cstorch.run_state import configured, fresh_run  # noqa: F401
from tests.harness import ROOT

SCRIPT = textwrap.dedent('''
    import json, sys, warnings
    import torch
    import cerebras_pytorch as cbtorch
    import cerebras_pytorch.experimental as cstorch
    from cerebras_pytorch.core import cb_model as cm, modes, name_scope
    from cerebras_pytorch.utils import extract_loss
    from cerebras_appliance.pb.stack.autogen_pb2 import AP_DISABLED
    from cerebras_appliance.environment import appliance_environ
    from cerebras_appliance.pb.workflow.appliance.common.common_config_pb2 import ExecutionStrategy
    import cerebras.pytorch

    seen = {"use_cs_before": cm.use_cs()}
    cstorch.configure(model_dir=sys.argv[1], compile_dir=sys.argv[1] + "/compile", num_workers_per_csx=0, checkpoint_steps=1,
                      execution_strategy=ExecutionStrategy.ES_WEIGHT_STREAMING)
    state = cbtorch.state()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        state.full_config.matching.kernel.inc_pwt_estimate = True
        state.full_config.matching.autogen_policy = AP_DISABLED
    scope = cbtorch.nn.Scope("LOSS")
    x = torch.ones(2)
    try:
        cm.set_run_config
    except Exception as exc:
        seen["base_runner"] = [exc.code, str(exc)]
    seen["probed"] = hasattr(cm, "mark_step")
    try:
        vts = cbtorch.nn.StripPadding()  # built whatever the mode (ModelZoo's models do), refused when applied
        vts(torch.ones(2, 3), torch.ones(2, 3))
    except Exception as exc:
        seen["vts"] = [exc.code, str(exc)]
    model = torch.nn.Linear(4, 2)
    compiled = cstorch.compile(model, backend="WSE_WS")
    optimizer = cstorch.optim.Adamax(model.parameters(), lr=0.1)

    @cstorch.compile_step
    def step(inputs):
        # R1.8's models make tensors on their parameters' device ("xla"): made where the data is
        positions = torch.arange(2, device=model.weight.device).to(model.weight.device)
        loss = compiled(inputs).square().mean() + positions.sum() * 0
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    before = model.weight.detach().clone()
    step(torch.ones(3, 4))
    seen.update(
        use_cs=cm.use_cs(), wse=cm.is_wse_device(), appliance=cm.is_appliance(), device=str(cm.device()),
        ordinal=cm.get_ordinal(), tasks=cm.num_tasks(), master=cm.is_master_ordinal(), streamer=cm.is_streamer(),
        ws=cbtorch.env().weight_streaming_mode, modes=list(modes.get_modes()), valid=modes.is_valid("eval"),
        policy=state.full_config.matching.autogen_policy == AP_DISABLED, settings=sorted(state.full_config.settings()),
        warnings=[str(w.message) for w in caught], scope=scope(x) is x and scope.exit(x) is x,
        loss=[extract_loss(x) is x, extract_loss((x, 1)) is x],
        environ=appliance_environ.get("ZOO_MARK"), core_has_cb_model=hasattr(cerebras.pytorch.core, "cb_model"),
        devices=sorted({p.device.type for p in model.parameters()}), trained=not torch.equal(before, model.weight.data),
        state_dict_devices=sorted({t.device.type for t in model.state_dict().values()}),
        later_compile=cerebras.pytorch.compile is not cstorch.compile,
    )
    json.dump(seen, sys.stdout)
''')


def test_modelzoo_18s_wheel_names_answer_for_a_weight_streaming_run(ws_csd, tmp_path):
    script = tmp_path / "names.py"
    script.write_text(SCRIPT)
    env = {**ws_csd.env(), "ZOO_MARK": "set"}
    done = subprocess.run([sys.executable, "-m", "csadmin.cstorch", str(script), str(tmp_path / "out")], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert (seen["use_cs_before"], seen["use_cs"], seen["wse"], seen["appliance"]) == (False, True, True, False)
    assert (seen["device"], seen["ordinal"], seen["tasks"], seen["master"], seen["streamer"]) == ("cpu", 0, 1, True, False)
    assert seen["ws"] and seen["valid"] and seen["modes"] == ["train", "eval", "train_and_eval", "inference", "eval_all"]
    assert seen["policy"] and seen["settings"] == ["matching.autogen_policy", "matching.kernel.inc_pwt_estimate"]
    assert seen["warnings"] == [  # said once, for the first setting
        "cbtorch.state().full_config.matching.kernel.inc_pwt_estimate: the real compiler's setting is kept "
        "(full_config.settings()) and changes nothing (csd's compile has no kernel choices)."]
    assert seen["scope"] and seen["loss"] == [True, True] and seen["environ"] == "set"
    assert seen["base_runner"] == [
        "INVALID_STATE", "cerebras_pytorch.core.cb_model.set_run_config belongs to R1.8's PyTorchBaseRunner flow, "
                         "which is not built here. Run ModelZoo's cstorch flow: set `experimental_api: True` in the "
                         "params' runconfig."]
    assert seen["probed"] is False  # probing one (hasattr) answers as for a missing name
    assert seen["vts"] == [  # Variable Tensor Shape: Layer Pipelined only in R1.8
        "INVALID_ARGUMENT",
        "cerebras_pytorch.nn.StripPadding (Variable Tensor Shape, the model's `enable_vts`) runs in Layer Pipelined "
        "execution only; ModelZoo's cstorch flow compiles for weight streaming (backend WSE_WS), which does not take "
        "it. Set `enable_vts: False` in the params' model section."]
    assert not seen["core_has_cb_model"] and seen["later_compile"]  # the later releases' names are untouched
    # R1.8's compile puts the parameters on "xla" (ModelZoo asserts it); they train as before, and
    # what state_dict hands out is plain CPU tensors
    assert seen["devices"] == ["xla"] and seen["trained"] and seen["state_dict_devices"] == ["cpu"]


@pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one
def test_configure_optimizer_takes_modelzoos_spellings():
    params = [torch.nn.Parameter(torch.ones(2))]
    optimizer = cstorch.optim.configure_optimizer(
        optimizer_type="adamw", params=params, learning_rate=[{"scheduler": "Linear"}], beta1=0.9, beta2=0.95,
        epsilon=1.0e-8, weight_decay_rate=0.01, use_bias_correction=True, max_gradient_norm=1.0,
        disable_lr_steps_reset=True)  # R1.8's older runner's schedules read it (bert's configs set it)
    group = optimizer.param_groups[0]
    assert (group["eps"], group["correct_bias"], group["betas"], group["weight_decay"]) == (1.0e-8, True, (0.9, 0.95), 0.01)
    with pytest.warns(UserWarning) as caught:  # params_gpt3_20b.yaml carries it over from the TensorFlow config
        cstorch.optim.configure_optimizer(optimizer_type="adamw", params=params, ws_summary=True)
    assert [str(w.message) for w in caught] == [
        "optimizer: ws_summary (the TensorFlow Trainer's weight summaries) changes nothing: no PyTorch runner reads it."]
    with pytest.raises(errors.InvalidArgument) as exc:  # a class without eps does not take epsilon either
        cstorch.optim.configure_optimizer(optimizer_type="sgd", params=params, lr=0.1, epsilon=1.0e-8)
    assert exc.value.message.startswith("SGD does not take 'epsilon'")
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.optim.configure_optimizer(optimizer_type="adamw", params=params, eps=1.0e-8, epsilon=1.0e-8)
    assert exc.value.message == "AdamW: epsilon and eps are one parameter, given twice."


@pytest.mark.usefixtures("configured")  # a cstorch optimizer needs a backend, as the real one
def test_configure_lr_scheduler_takes_modelzoos_steps_and_says_alpha_changes_nothing():
    optimizer = cstorch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1)
    with pytest.warns(UserWarning, match=r"alpha=0.1 of the Linear schedule changes nothing"):
        scheduler = cstorch.optim.configure_lr_scheduler(optimizer, [
            {"scheduler": "Linear", "initial_learning_rate": 0.0, "end_learning_rate": 0.6, "steps": 2},
            {"scheduler": "Linear", "initial_learning_rate": 0.6, "end_learning_rate": 0.0, "alpha": 0.1, "steps": 4},
        ])
    assert isinstance(scheduler, cstorch.optim.lr_scheduler.SequentialLR) and scheduler.milestones == [2]
    lrs = []
    for _ in range(6):
        lrs.append(round(float(scheduler.get_last_lr()[0]), 6))
        optimizer.step()
        scheduler.step()
    assert lrs == [0.0, 0.3, 0.6, 0.45, 0.3, 0.15]
