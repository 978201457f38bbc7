"""R1.8's `cerebras_pytorch.core.cb_model`: where ModelZoo 1.8's code is running, and its helpers
to move values between the host and the device.

    from cerebras_pytorch.core import cb_model as cm
    if cm.use_cs(): ...                   # building for the system: its layers and metrics choose
    cm.device()                           # the device the model's tensors are on (torch's "cpu" here)
    @cm.step_closure                      # cstorch.step_closure
    def log(values): print(cm.to_cpu(values))

`use_cs()` is true once the process is configured for the system (cstorch.configure, which R1.8
runs only for a CS run) or compiled for it; `is_wse_device()` the same question. There is no
appliance here (csd is the one CS-2 and its control plane), so `is_appliance()` is False and
ModelZoo's metrics take their host path (a step closure). The task questions answer for this
process: the chief (`is_master_ordinal`, `is_receiver`, ordinal 0) or one of the input workers
(`is_streamer`, its streaming rank), as cstorch.distributed answers them.

The wheel's other functions here (`set_run_config`, `get_run_step`, `mark_step`, `mesh_reduce`,
`write_to_summary`, …) serve R1.8's older runner, not built here: asking for one raises
NotBuilt (INVALID_STATE, and an AttributeError) naming it and the flow that is built.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_map

from csadmin.cstorch import distributed
from csadmin.cstorch.backend import process_backend, use_cs as _backend_use_cs
from csadmin.cstorch.utils.step_closures import step_closure
from csadmin.cstorch.utils.constant import make_constant
from csadmin.errors import InvalidState

__all__ = ["use_cs", "is_wse_device", "is_appliance", "device", "to_cpu", "to_device", "step_closure",
           "make_constant", "is_master_ordinal", "is_receiver", "is_streamer", "get_ordinal",
           "get_streaming_rank", "num_streamers", "num_receivers", "num_tasks", "set_rng_state",
           "set_metric_state_names"]


def use_cs() -> bool:
    """True once this process is configured (cstorch.configure) or compiled for the system."""
    backend = process_backend.current()
    return _backend_use_cs() or (backend.config is not None and backend.kind in (None, "CSX"))


def is_wse_device() -> bool:
    """Whether the model's device is the system's: use_cs()."""
    return use_cs()


def is_appliance() -> bool:
    """False: csd runs the CS-2 itself; there is no appliance cluster in between."""
    return False


def device() -> torch.device:
    """The torch device the model's tensors are on (the backend's: "cpu", "cuda" for a GPU one)."""
    return process_backend.current().torch_device


def to_cpu(values):
    """`values` (a tensor, or lists, tuples and dicts of them) with every tensor on the CPU."""
    return tree_map(lambda v: v.to("cpu") if isinstance(v, torch.Tensor) else v, values)


def to_device(values, target):
    """`values` with every tensor moved to `target`."""
    return tree_map(lambda v: v.to(target) if isinstance(v, torch.Tensor) else v, values)


def is_master_ordinal() -> bool:
    """Whether this process is the chief (the script's own, not an input worker)."""
    return distributed.is_master_ordinal()


def is_receiver() -> bool:
    """Whether this process receives the step's outputs: the chief."""
    return distributed.is_master_ordinal()


def is_streamer() -> bool:
    """Whether this process is an input worker."""
    return distributed.is_streamer()


def get_streaming_rank() -> int:
    """This input worker's index (0 outside one)."""
    return distributed.get_streaming_rank()


def num_streamers() -> int:
    """How many input workers feed the run (1 outside one)."""
    return distributed.num_streamers()


def num_receivers() -> int:
    """One: the chief receives every output."""
    return 1


def get_ordinal() -> int:
    """The task's ordinal: 0 for the chief, 1 + the streaming rank for an input worker."""
    return 0 if is_master_ordinal() else 1 + get_streaming_rank()


def num_tasks() -> int:
    """The chief and the input workers that feed the run (1 without any)."""
    if is_streamer():
        return 1 + num_streamers()
    config = process_backend.current().config
    return 1 + config.num_workers_per_csx if config is not None and config.fed_by_workers else 1


def set_rng_state(seed: int) -> None:
    """Seed torch's generator, which every random op here draws from."""
    torch.manual_seed(seed)


def set_metric_state_names(state_dict: dict, metric_name: str) -> None:
    """Name a metric's state tensors (`<metric>/<state>`) for the compile's records: the capture
    already carries them as persistent state, updated in place by each step."""
    from .stack import state

    state().name_tensors({f"{metric_name}/{key}": tensor for key, tensor in state_dict.items()})


class NotBuilt(InvalidState, AttributeError):
    """A function of R1.8's older runner: INVALID_STATE for a script that calls it, and an
    AttributeError for one that only probes (`hasattr`, `getattr(cm, name, default)`)."""


def _not_built(name: str) -> NotBuilt:
    return NotBuilt(f"{name} belongs to R1.8's PyTorchBaseRunner flow, which is not built here.",
                    "Run ModelZoo's cstorch flow: set `experimental_api: True` in the params' runconfig.")


def initialize(**settings) -> None:
    """R1.8's `cbtorch.initialize(...)`, which starts the older runner's backend: refused (NotBuilt)."""
    raise _not_built("cerebras_pytorch.initialize")


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    raise _not_built(f"cerebras_pytorch.core.cb_model.{name}")
