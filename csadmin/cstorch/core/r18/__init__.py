"""The R1.8 wheel's names around `cerebras_pytorch.experimental`, which ModelZoo 1.8 imports.

ModelZoo 1.8 (modelzoo/common/pytorch/__init__.py, with the wheel installed) does

    import cerebras_pytorch as cbtorch                      # cbtorch.state(), cbtorch.env(), cbtorch.nn.Scope
    from cerebras_pytorch.core import cb_model, modes, name_scope
    from cerebras_appliance.pb.stack.autogen_pb2 import AP_DISABLED
    from cerebras_appliance.environment import appliance_environ   # modelzoo/common/__init__.py

before its cstorch flow (run_cstorch_flow.py) runs on `cerebras_pytorch.experimental`. These
modules are what those names do here: `cb_model` answers where the process runs (the CS-2 csd
manages, from the chief process), `modes` names the run modes, `stack` is the compile stack's
state (`state()`, `env()`, `nn.Scope`, the autogen policies), `appliance` the appliance's
environment, `outputs` the loss among a model's outputs and `experimental` R1.8's compile (the
parameters then on "xla"). `python -m csadmin.cstorch` registers them under their real names
(MODULES; EXPERIMENTAL, CORE and UTILS in the packages `cerebras_pytorch.experimental`, `.core`
and `.utils`) and adds TOP_LEVEL to the top module `cerebras_pytorch`, APPLIANCE to
`cerebras_appliance`; the later releases' names
(`cerebras.pytorch`) never see them.

The wheel's other `cb_model` functions and `cbtorch.initialize` drive R1.8's older runner
(PyTorchBaseRunner, chosen by a runconfig without `experimental_api: True`), which is not built
here: asking for one raises InvalidState saying so (cb_model.NotBuilt).
"""

from __future__ import annotations

from . import appliance, cb_model, experimental, modes, outputs, stack

# The real module names, and the module of ours each one is.
MODULES = {
    "cerebras_pytorch.nn": stack,
    "cerebras_appliance.pb.stack.autogen_pb2": stack,
    "cerebras_appliance.environment": appliance,
}

# What R1.8's `cerebras_pytorch.experimental` holds differently from csadmin.cstorch.
EXPERIMENTAL = {"compile": experimental.compile}
# What R1.8's `cerebras_pytorch.core` holds besides csadmin.cstorch.core's modules.
CORE = {"cb_model": cb_model, "modes": modes}
# … and `cerebras_pytorch.utils` besides csadmin.cstorch.utils's names.
UTILS = {"extract_loss": outputs.extract_loss}

# What `import cerebras_pytorch as cbtorch` reads from the top module besides csadmin.cstorch's names.
TOP_LEVEL = {"state": stack.state, "env": stack.env, "nn": stack, "initialize": cb_model.initialize}
# … and from the top package `cerebras_appliance` (the older runner reads it before initialize).
APPLIANCE = {"DEFAULT_COMPILE_DIR": appliance.DEFAULT_COMPILE_DIR}
