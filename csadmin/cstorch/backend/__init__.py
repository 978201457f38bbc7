"""`cstorch.backend(...)` and `cstorch.current_backend()`: the later releases' way to set up the
process's backend — the same process_backend.Backend that `cstorch.configure` fills in the first release.

    backend = cstorch.backend("CSX", artifact_dir="out", compile_dir="out/compile",
                              cluster_config=cstorch.distributed.ClusterConfig(num_workers_per_csx=2))
    backend = cstorch.backend("CPU")      # the same script, the math eagerly on this CPU, no system
    backend = cstorch.backend("GPU")      # … on the CUDA device
    cstorch.backend()                     # the backend made before (InvalidState if none)
    cstorch.use_cs()                      # True exactly when that backend is CSX
    cstorch.current_torch_device()        # its torch device (the CPU before any backend)
    cstorch.get_backend_args("CSX")       # the parameters a CSX backend takes, by name

One backend per process, as the real package has: a second `cstorch.backend(type, ...)`, or one
after `cstorch.configure`, is refused ("Cannot instantiate multiple backends"). A cstorch
optimizer needs the backend (optim/optimizer.py refuses one made before it, with the real
"No active Cerebras backend found"): build the backend first, the model under `with
backend.device:`, then the optimizer.

"CSX" is csd's system with every rule: its arguments go through `cstorch.configure` (the
artifact directory is the model directory; the cluster config's fields are configure's), csd is
asked now whether its system is ACTIVE in weight streaming, and steps must run inside a
DataExecutor. `compile_dir` defaults to `<artifact_dir>/cached_compile` (the real default,
/opt/cerebras/cached_compile, is on the appliance; here the compile is written by this process).
"CPU" and "GPU" contact no system: steps run eagerly with PyTorch (GPU: on the CUDA device, under
autocast to the half dtype, as the vendor's GPU backend does), said in one line on stderr.
"""

from __future__ import annotations

import inspect
import os
import sys
import warnings

import torch

from csadmin.errors import CsError, InvalidArgument, InvalidState

from . import process_backend
from .backend_type import BackendType
from .cluster import Cluster
from .process_backend import Backend  # the class cstorch.backend(...) makes, where the real module has it
from .config import PARAMETERS, configure
from .csd_link import CsdLink
from ..distributed import ClusterConfig

WEIGHT_STREAMING = "WEIGHT_STREAMING"
ONE_LINE = {
    "CPU": "the steps run eagerly with PyTorch on this CPU",
    "GPU": "the steps run eagerly with PyTorch on the CUDA device, under autocast to the half dtype",
}
_UNSET = object()


def backend(backend_type=None, *args, **kwargs) -> process_backend.Backend:
    """Make the process's backend of `backend_type` ("CSX", "CPU", "GPU"; any case), or, with no
    argument, return the one made before (see the module docstring)."""
    if backend_type is None:
        if args or kwargs:
            raise InvalidArgument("cstorch.backend: expected backend_type when constructing a backend.",
                                  hint='Pass one of "CSX", "CPU", "GPU" to create a backend, or call cstorch.backend() '
                                       "with no arguments for the current one.")
        return current_backend(raise_warning=False)
    kind = backend_kind(backend_type)
    process = process_backend.current()
    if process.target is not None or process.config is not None:
        made = process.kind or "CSX (cstorch.configure)"
        raise InvalidState(f"Cannot instantiate multiple backends: a backend with type {made} has already been "
                           f"instantiated in this process.",
                           hint="Use cstorch.backend() to access the existing backend; a backend of another type "
                                "runs in a separate process.")
    make = {"CSX": _csx, "CPU": _cpu, "GPU": _gpu}[kind]
    try:
        bound = inspect.signature(make).bind(process, *args, **kwargs)
    except TypeError as exc:
        valid = [p for p in inspect.signature(make).parameters if p != "process"]
        raise InvalidArgument(f"cstorch.backend({kind!r}): {exc}.", hint=f"Valid arguments: {', '.join(valid)}.") \
            from None
    make(*bound.args, **bound.kwargs)
    process.executor_required = True
    return process


def backend_kind(backend_type) -> str:
    """"CSX", "CPU" or "GPU" for a backend type as scripts give it (a name in any case, or a
    BackendType member); InvalidArgument otherwise."""
    if not isinstance(backend_type, BackendType):
        backend_type = BackendType.from_str(backend_type)
    return "CSX" if backend_type.is_csx else backend_type.name


def current_backend(raise_exception: bool = True, raise_warning: bool = True) -> process_backend.Backend | None:
    """The process's backend once cstorch.backend, cstorch.configure or cstorch.compile made it;
    else InvalidState (or None with raise_exception=False). Deprecated in the real package in
    favour of cstorch.backend(), and warns so unless raise_warning=False."""
    if raise_warning:
        warnings.warn("cstorch.current_backend() is deprecated and will be removed in a future release. "
                      "Use cstorch.backend() instead to access the current backend.", DeprecationWarning, stacklevel=2)
    process = process_backend.current()
    if not process.made and not raise_exception:
        return None
    return process.require(hint="Call cstorch.backend(\"CSX\", ...) at the start of the script.")


def current_backend_impl(raise_exception: bool = True) -> process_backend.Backend | None:
    """The backend's implementation: the real package keeps it behind the backend object; here
    they are one object, so this is `cstorch.backend()` (None before one is made, with
    raise_exception=False; else InvalidState)."""
    return current_backend(raise_exception=raise_exception, raise_warning=False)


def current_torch_device() -> torch.device:
    """The torch device the backend's tensors are on (`backend.torch_device`): the CPU for CSX
    here (the real system's is its lazy device), CUDA for GPU; the CPU before any backend."""
    process = current_backend(raise_exception=False, raise_warning=False)
    return torch.device("cpu") if process is None else process.torch_device


def use_cs() -> bool:
    """True exactly when the process's backend runs on the system (CSX); False for CPU and GPU,
    and before any backend is made."""
    process = current_backend(raise_exception=False, raise_warning=False)
    return process is not None and process.backend_type.is_csx


def get_backend_args(backend_type):
    """The parameters a backend of `backend_type` ("CSX", "CPU", "GPU" or a BackendType) takes,
    as the real package lists them: its implementation's constructor's (`self`, `backend_type`,
    then the keywords `cstorch.backend(type, ...)` accepts), a mapping of name to
    inspect.Parameter. Scripts filter their settings with it."""
    make = {"CSX": _csx, "CPU": _cpu, "GPU": _gpu}[backend_kind(backend_type)]
    given = list(inspect.signature(make).parameters.values())[1:]  # without `process`, this module's own
    head = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in ("self", "backend_type")]
    return inspect.Signature(head + given).parameters


def _configure(kind: str, **kwargs):
    """configure(**kwargs) for backend(kind): its refusals said as this call's."""
    try:
        return configure(**kwargs)
    except CsError as exc:
        raise type(exc)(f"cstorch.backend({kind!r}): {exc.message.removeprefix('configure: ')}", exc.hint) from None


def _artifact_dir(artifact_dir) -> str:
    return os.path.join(os.getcwd(), "cerebras_logs") if artifact_dir is None else os.fspath(artifact_dir)


def _flag(kind: str, name: str, value) -> None:
    if value is not None and not isinstance(value, bool):
        raise InvalidArgument(f"cstorch.backend({kind!r}): {name} must be True or False, not {value!r}.")


def _csx(process, artifact_dir=None, compile_dir=None, compile_only=False, validate_only=False,
         cluster_config=None, retrace_every_iteration=None, use_cs_grad_accum=None, drop_data=None,
         max_checkpoints=None) -> None:
    """The system: configure with these arguments, then csd must be ACTIVE in weight streaming.
    `use_cs_grad_accum`, `drop_data` and `max_checkpoints` are checked and change nothing here
    (one CS-2 without micro-batching; the weights are this process's; the script names its files)."""
    if cluster_config is not None and not isinstance(cluster_config, ClusterConfig):
        raise InvalidArgument(f"cstorch.backend('CSX'): cluster_config must be a "
                              f"cstorch.distributed.ClusterConfig, not {type(cluster_config).__name__}.")
    for name, value in (("retrace_every_iteration", retrace_every_iteration),
                        ("use_cs_grad_accum", use_cs_grad_accum), ("drop_data", drop_data)):
        _flag("CSX", name, value)
    if max_checkpoints is not None and (isinstance(max_checkpoints, bool) or not isinstance(max_checkpoints, int)
                                        or max_checkpoints < 1):
        raise InvalidArgument(f"cstorch.backend('CSX'): max_checkpoints must be None or an integer ≥ 1, "
                              f"not {max_checkpoints!r}.")
    artifact_dir = _artifact_dir(artifact_dir)
    cluster = {} if cluster_config is None else cluster_config.configure_kwargs(PARAMETERS)
    if compile_dir is None:
        compile_dir = os.path.join(artifact_dir, "cached_compile")
    config = _configure("CSX", model_dir=artifact_dir, compile_dir=compile_dir, compile_only=compile_only,
                        validate_only=validate_only, **cluster)
    link = CsdLink(config)
    try:
        link.check_system(WEIGHT_STREAMING, "CSX", {"CSX": WEIGHT_STREAMING})
    except BaseException:
        link.shutdown()
        process.config = None  # nothing was made: a corrected call may follow
        raise
    if retrace_every_iteration is not None:
        process.csx.debug.retrace_every_iteration = retrace_every_iteration
    process.csd, process.target, process.execmode = link, "CSX", WEIGHT_STREAMING
    process.cluster = Cluster(cluster_config or ClusterConfig(), link.run_ids)


def _cpu(process, artifact_dir=None, mixed_precision=_UNSET) -> None:
    """This CPU, no system."""
    if mixed_precision is not _UNSET:
        raise InvalidArgument("Passing mixed_precision to the CPU backend is no longer allowed.",
                              hint="Please use the cstorch.amp.autocast() context manager instead.")
    _without_system(process, "CPU", artifact_dir)


def _gpu(process, artifact_dir=None, enable_distributed=False, main_process_id=0, dist_backend="nccl",
         init_method=None, sync_batchnorm=False) -> None:
    """The CUDA device, no system. One process drives one GPU here: distributed training (torchrun,
    a process group) is refused rather than run on one device."""
    if not torch.cuda.is_available():
        raise InvalidState("GPU was specified as the target device, but CUDA is not available.",
                           hint="Please make sure you have a PyTorch installation with CUDA enabled to run on GPU, "
                                "or use cstorch.backend(\"CPU\").")
    _flag("GPU", "enable_distributed", enable_distributed)
    _flag("GPU", "sync_batchnorm", sync_batchnorm)
    if enable_distributed:
        raise InvalidArgument("cstorch.backend('GPU'): enable_distributed=True is not run here: this runtime drives "
                              "one GPU from one process.", hint="Leave enable_distributed False.")
    _without_system(process, "GPU", artifact_dir)


def _without_system(process, kind: str, artifact_dir) -> None:
    artifact_dir = _artifact_dir(artifact_dir)
    _configure(kind, model_dir=artifact_dir, compile_dir=os.path.join(artifact_dir, "cached_compile"))
    process.target = kind
    print(f"cstorch: backend {kind}: {ONE_LINE[kind]}; no system: csd is not contacted and none of the wafer's "
          f"rules apply.", file=sys.stderr, flush=True)
