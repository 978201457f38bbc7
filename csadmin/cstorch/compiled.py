"""`cstorch.compile(model, backend=...)`: prepare a model for the system (004: it does not compile).

It checks the system now — csd reachable, ACTIVE, running the execution mode the backend names —
so a mismatch is refused before any step. BACKENDS maps the names (any case): "wse_ws" is weight
streaming (the document's name), "wse_pl" pipelined (ours: the real API names only "wse_ws").

The model itself is returned wrapped (CompiledModel: call it, train()/eval() it); the original
module's `state_dict()` now asks the backend's check_weights_fetch("model") first, so weights are only
fetched on checkpoint steps, and its `load_state_dict(..., assign=True)` is refused (assigning would
replace the tensors the run's program updates by identity; the real package refuses it too).

The later releases' forms: `compile(model, backend)` with the backend `cstorch.backend(...)` made,
`compile(model, "CSX" | "CPU" | "GPU")` (which makes it, as the real package does) and
`compile(model)` (the backend made before; with none, the first release's "wse_ws" after
configure, else a CPU backend). A CPU or GPU backend contacts no system and checks no wafer rule
(float32 weights included); GPU moves the model to the CUDA device.
"""

from __future__ import annotations

import torch

from csadmin.errors import IncompatibleProgram, InvalidArgument, InvalidState

import csadmin.cstorch.state as state
from .amp.precision import check_float32_weights
from .csd_link import CsdLink

BACKENDS = {"wse_ws": "WEIGHT_STREAMING", "wse_pl": "PIPELINED"}

# 001, "Modes".
TRAIN_AND_EVAL_RULE = (
    "a run is train or eval, never both: mode train_and_eval is not supported because the fabric "
    "cannot be reprogrammed for eval after having been programmed for train in the same run"
)


def _weights_hook(module, prefix, keep_vars):
    state.current().check_weights_fetch("model")


def _assign_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
    if local_metadata.get("assign_to_params_buffers", False):
        raise InvalidState("Cannot call model.load_state_dict(..., assign=True) on a model that has already been "
                           "compiled: assigning replaces the tensors the system's program updates.",
                           hint="Please call with assign=False (the values are copied into the compiled model's "
                                "tensors).")


class CompiledModel:
    """A model prepared for the system: call it inside a compile_step function. `backend` is the
    process's backend (state.Backend: `.name`, `.is_wse()`, `str()` the name compiled for)."""

    def __init__(self, model: torch.nn.Module, backend: state.Backend):
        self.model = model
        self.backend = backend

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def train(self, mode: bool = True) -> "CompiledModel":
        """Set the model's mode; refused while a run's program compiled for the other runs."""
        run = state.current().run
        run_mode = None if run.finished and run.executor is not None else run.mode
        if run_mode is not None and run_mode != ("train" if mode else "eval"):
            raise mode_change(f"compiled_model.{'train' if mode else 'eval'}()", run_mode)
        self.model.train(mode)
        return self

    def eval(self) -> "CompiledModel":
        return self.train(False)

    @property
    def training(self) -> bool:
        return self.model.training

    def parameters(self, recurse: bool = True):
        return self.model.parameters(recurse)

    def named_parameters(self, *args, **kwargs):
        return self.model.named_parameters(*args, **kwargs)

    def state_dict(self, *args, **kwargs):
        return self.model.state_dict(*args, **kwargs)

    def load_state_dict(self, *args, **kwargs):
        return self.model.load_state_dict(*args, **kwargs)

    def __repr__(self) -> str:
        # short: refusals name the model (ReprogramForbidden "another model"), never print it whole
        return f"<compiled {type(self.model).__name__} model at {id(self.model):#x}, backend={str(self.backend)!r}>"


def mode_change(what: str, run_mode: str) -> IncompatibleProgram:
    return IncompatibleProgram(
        f"{what} after this run's program was compiled for {run_mode}: {TRAIN_AND_EVAL_RULE}.",
        "Run training and evaluation in separate processes (one run each; evaluate a checkpoint).")


def check_modes(models: list, run_mode: str) -> None:
    """Refuse a step when a compiled model's module was switched to the other mode directly
    (`model.eval()` on the module itself) since the program was compiled."""
    for m in models:
        if m.model.training != (run_mode == "train"):
            raise mode_change(f"{type(m.model).__name__}.{'train' if m.model.training else 'eval'}()", run_mode)


def parse_backend(backend) -> str:
    key = backend.strip().lower() if isinstance(backend, str) else None
    if key not in BACKENDS:
        raise InvalidArgument(f"compile: unknown backend {backend!r}.",
                              f"Use one of {', '.join(repr(b) for b in BACKENDS)} "
                              f"({', '.join(BACKENDS.values())}).")
    return key


def _later_backend(process: state.Backend, backend) -> str | None:
    """The process backend's name when `backend` is the later releases' (a Backend, one of their
    type names, or None with such a backend made), making it if asked by name; else None."""
    from .backend_api import TYPES, backend as make_backend, backend_kind

    if isinstance(backend, state.Backend):
        if backend is not process:
            raise InvalidState("Compile got a different backend than the currently initialized backend.",
                               "Pass the backend cstorch.backend() returns (one per process).")
        if not process.executor_required:
            raise InvalidState("compile: this backend was not made by cstorch.backend(...).",
                               "Create it with cstorch.backend(\"CSX\", ...) first.")
        return process.target
    if backend is None:
        if process.executor_required:
            return process.target
        if process.config is None:  # the real default: a CPU backend
            return make_backend("CPU").target
        return None
    configured = process.config is not None and not process.executor_required  # the first release's
    if isinstance(backend, str) and backend.strip().upper() in TYPES and not configured:
        kind = backend_kind(backend)
        if process.target is None:
            make_backend(kind)
        elif process.kind != kind:
            raise InvalidState(f"compile: backend {backend!r}, but this process's backend is {process.kind}: one "
                               f"backend per process.", "Compile for the backend cstorch.backend() made.")
        return process.target
    return None


def compile(model: torch.nn.Module, backend=None) -> CompiledModel:
    """Prepare `model` for the system `backend` names; see the module docstring."""
    process = state.current()
    later = _later_backend(process, backend)
    config = process.require_config()
    if not isinstance(model, torch.nn.Module):
        raise InvalidArgument(f"compile: model must be a torch.nn.Module, not {type(model).__name__}.",
                              "Pass the model instance (e.g. cstorch.compile(model, backend='wse_ws')).")
    if later in ("CPU", "GPU"):  # no system, no wafer rule
        compiled = CompiledModel(process.device.move_to_device(model), process)
        process.models.append(compiled)
        return compiled
    check_float32_weights(model)  # 001: only mixed precision, weights stored as float32
    key = later or parse_backend("wse_ws" if backend is None else backend)
    execmode = BACKENDS.get(key, "WEIGHT_STREAMING")
    if process.run.finished and process.run.executor is None:
        raise InvalidState("This process's run has ended: one run per process.",
                           "Start a new process for another run.")
    if process.target is not None and process.target != key:
        raise InvalidArgument(
            f"compile: backend {backend!r} differs from the run's {process.target!r}: one run, one execution mode.",
            "Compile every model of this process for the same backend.")
    if process.csd is None:  # validate_only and compile_only check the system too, and stop there
        process.csd = CsdLink(config)
    process.csd.check_system(execmode, key if later else backend, BACKENDS)
    process.target, process.execmode = key, execmode
    compiled = CompiledModel(model, process)
    if not any(m.model is model for m in process.models):
        for module in model.modules():
            module.register_state_dict_pre_hook(_weights_hook)
            module._register_load_state_dict_pre_hook(_assign_hook)
    process.models.append(compiled)
    return compiled
