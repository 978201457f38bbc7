"""`cstorch.compile(model, backend=...)`: prepare a model for the system (004: it does not compile).

It checks the system now — csd reachable, ACTIVE, running the execution mode the backend names —
so a mismatch is refused before any step. BACKENDS maps the names (any case): "wse_ws" is weight
streaming (the document's name), "wse_pl" pipelined (ours: the real API names only "wse_ws").

The model itself is returned wrapped (CompiledModel: call it, train()/eval() it); the original
module's `state_dict()` now asks the backend's check_weights_fetch("model") first, so weights are only
fetched on checkpoint steps.
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


class CompiledModel:
    """A model prepared for the system: call it inside a compile_step function. `backend` is the
    process's backend (state.Backend: `.name`, `.is_wse()`, `str()` the name compiled for)."""

    def __init__(self, model: torch.nn.Module, backend: state.Backend):
        self.model = model
        self.backend = backend

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    def train(self, mode: bool = True) -> "CompiledModel":
        """Set the model's mode; refused once the run's program was compiled for the other."""
        run_mode = state.current().run.mode
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


def compile(model: torch.nn.Module, backend: str = "wse_ws") -> CompiledModel:
    """Prepare `model` for the system `backend` names; see the module docstring."""
    process = state.current()
    config = process.require_config()
    if not isinstance(model, torch.nn.Module):
        raise InvalidArgument(f"compile: model must be a torch.nn.Module, not {type(model).__name__}.",
                              "Pass the model instance (e.g. cstorch.compile(model, backend='wse_ws')).")
    check_float32_weights(model)  # 001: only mixed precision, weights stored as float32
    key = parse_backend(backend)
    execmode = BACKENDS[key]
    if process.run.finished:
        raise InvalidState("This process's run has ended: one run per process.",
                           "Start a new process for another run.")
    if process.target is not None and process.target != key:
        raise InvalidArgument(
            f"compile: backend {backend!r} differs from the run's {process.target!r}: one run, one execution mode.",
            "Compile every model of this process for the same backend.")
    if process.csd is None:  # validate_only and compile_only check the system too, and stop there
        process.csd = CsdLink(config)
    process.csd.check_system(execmode, backend, BACKENDS)
    process.target, process.execmode = key, execmode
    compiled = CompiledModel(model, process)
    if not any(m.model is model for m in process.models):
        for module in model.modules():
            module.register_state_dict_pre_hook(_weights_hook)
    process.models.append(compiled)
    return compiled
