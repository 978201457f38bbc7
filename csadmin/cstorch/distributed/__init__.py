"""cstorch.distributed: the cluster a CSX backend runs on, and which input worker a process is.

    cluster_config = cstorch.distributed.ClusterConfig(num_csx=1, num_workers_per_csx=4,
                                                       mount_dirs=[...], job_labels=["team=nlp"])
    backend = cstorch.backend("CSX", cluster_config=cluster_config)

`ClusterConfig` is a dataclass of the real package's fields (a script may build it from a yaml
with HfArgumentParser, as Cerebras's gigaGPT does); None means the default. It holds what
`cstorch.configure` takes in the first release, and `cstorch.backend` gives its fields to the
same configuration (`configure_kwargs()`), so every rule of configure applies: one CS-2 for one
csd (`num_csx` 1), input workers (`num_workers_per_csx`), existing `mount_dirs` and
`python_paths`, `key=value` job labels. `mgmt_address` is csd (a connection file or an endpoint;
default `$CS_CONNECT`), `credentials_path` your key file (default `$CS_KEY`). `mgmt_namespace` and
`disable_version_check` name things a csd does not have (one system, one protocol version):
they are accepted and change nothing. `cstorch.utils.CSConfig` (2.0–2.1) is this class.

`is_streamer()`, `get_streaming_rank()` and `num_streamers()` say whether this process is an
input worker, which one and of how many (cstorch.utils.data.worker_info(), for sharding);
`is_master_ordinal()` whether it is the script's own process, and `get_streaming_batch_size(n)`
the batch an input worker streams to the one CS-2 (n itself).

`service_resolver().cluster_spec` is the cluster as the real ClusterSpec describes it, with this
process's task (cluster_resolver.py: what ModelZoo's input functions read); `get_ordinal()` and
`num_tasks()` read it.

`get_worker_state()` is for a restartable dataloader's `state_dict` (utils/data/restartable.py):
there, and once per call, it returns the worker's DataLoaderCheckpoint (what it streamed in this
run); anywhere else, or a second time, it is refused, as the real one refuses.
"""

from __future__ import annotations

import dataclasses
from typing import List, Optional

from csadmin.errors import InvalidArgument, InvalidState

from ..backend import process_backend
from .cluster_resolver import ServiceResolver

# ClusterConfig's field → configure's parameter, where the names differ.
_RENAMED = {"credentials_path": "key"}
_NOTHING_HERE = ("mgmt_namespace", "disable_version_check")


@dataclasses.dataclass
class ClusterConfig:
    """The cluster of a CSX backend (see the module docstring)."""

    mgmt_address: Optional[str] = None
    mgmt_namespace: Optional[str] = None
    credentials_path: Optional[str] = None
    num_csx: Optional[int] = None
    max_wgt_servers: Optional[int] = None
    max_act_per_csx: Optional[int] = None
    num_workers_per_csx: Optional[int] = None
    transfer_processes: Optional[int] = None
    job_labels: Optional[List[str]] = None
    job_time_sec: Optional[int] = None
    mount_dirs: Optional[List[str]] = None
    python_paths: Optional[List[str]] = None
    disable_version_check: Optional[bool] = None

    def __hash__(self) -> int:
        """By the fields set, lists as tuples, as the real one hashes (ModelZoo caches backends by
        their arguments, this among them)."""
        return hash(tuple(tuple(v) if isinstance(v, list) else v
                          for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None))

    def configure_kwargs(self, parameters) -> dict:
        """The fields given (not None), under configure's names, that configure's `parameters`
        take: configure checks each one."""
        given = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            name = _RENAMED.get(f.name, f.name)
            if value is not None and f.name not in _NOTHING_HERE and name in parameters:
                given[name] = value
        return given


def is_streamer() -> bool:
    """Whether this process is an input worker (it streams batches to the system)."""
    return process_backend.current().is_input_worker


def get_streaming_rank() -> int:
    """This input worker's index among the input workers (0 outside one)."""
    return process_backend.current().worker.task_id


def num_streamers() -> int:
    """How many input workers feed the run (1 outside one)."""
    return process_backend.current().worker.num_tasks


def is_master_ordinal(local: bool = False) -> bool:
    """Whether this process is the run's master task, the one that compiles and drives the run
    (the script's own process), not an input worker. `local` is taken as the real one takes it,
    for the XLA API's signature, and changes nothing."""
    return not process_backend.current().is_input_worker


def get_streaming_batch_size(effective_batch_size: int, global_rank: int | None = None) -> int:
    """The batch size an input worker streams to its CS-2 for a model of `effective_batch_size`:
    that size itself here, as csd has one CS-2 (`num_csx` 1), which receives the whole batch;
    the script's input function may call it on either side. Refused: a size that is not an
    integer ≥ 1. `global_rank` (which task's size) has the same answer for every task."""
    if isinstance(effective_batch_size, bool) or not isinstance(effective_batch_size, int):
        raise InvalidArgument(f"Expected effective batch size to be an integer, but got type "
                              f"{type(effective_batch_size)} with value {effective_batch_size}.",
                              hint="Pass the model's batch size, a whole number.")
    if effective_batch_size <= 0:
        raise InvalidArgument(f"Expected effective batch size to be a positive integer, but got value "
                              f"{effective_batch_size}.", hint="Pass the model's batch size, at least 1.")
    return effective_batch_size


def get_worker_state():
    """This input worker's DataLoaderCheckpoint, inside its dataloader's state_dict at a
    checkpoint step; InvalidState anywhere else, and on a second call in the same state_dict
    (the state is handed out once, as the real API hands it)."""
    backend = process_backend.current()
    checkpoint, backend.worker_state = backend.worker_state, None
    if checkpoint is None:
        raise InvalidState(
            "Unable to fetch the input worker's state: cstorch.distributed.get_worker_state() must only be "
            "called once, inside your dataloader's implementation of state_dict (which cstorch calls at a "
            "checkpoint step).",
            hint="Call it in the state_dict method of the RestartableDataLoader your input function returns, "
                 "and save cstorch.utils.data.DataLoader.state_dict() in a @cstorch.checkpoint_closure.")
    return checkpoint


def service_resolver():
    """The cluster's tasks and roles (cluster_resolver.ServiceResolver: `.cluster_spec`)."""
    return ServiceResolver()


def get_ordinal() -> int:
    """This process's rank among its cluster's tasks (0: the script's own process, the master);
    ModelZoo's log formatter prefixes an input worker's lines with it."""
    return service_resolver().cluster_spec.rank


def num_tasks() -> int:
    """How many tasks this process's cluster has (1 in the script's process)."""
    return service_resolver().cluster_spec.num_tasks()
