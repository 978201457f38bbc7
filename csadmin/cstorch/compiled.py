"""`cstorch.compile(model, backend=...)`: prepare a model for the system (004: it does not compile).

It checks the system now — csd reachable, ACTIVE, running the execution mode the backend names —
so a mismatch is refused before any step. BACKENDS maps the names (any case): "wse_ws" is weight
streaming (the document's name), "wse_pl" pipelined (ours: the real API names only "wse_ws").

The model itself is returned wrapped (CompiledModel: call it, train()/eval() it); the original
module's `state_dict()` now asks the backend's check_weights_fetch("model") first, so weights are only
fetched on checkpoint steps, and it gets a `device` attribute (the backend's device, as R1.8's
`torch.tensor(0.0).to(model.device)` reads it) unless it has one.

The run's mode is decided at the first step (`run_mode`): the step's program says it (a backward or
a parameter update makes a training program, a forward alone an evaluation one), and a
`compiled_model.train()` / `.eval()` the script called must agree with it (001: a run is train or
eval). After that first step, neither mode nor module state may change (`check_modes`).
"""

from __future__ import annotations

import torch

from csadmin.errors import IncompatibleProgram, InvalidArgument, InvalidState, ReprogramForbidden

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
    process's backend (state.Backend: `.name`, `.is_wse()`, `.device`, `str()` the name compiled for)."""

    def __init__(self, model: torch.nn.Module, backend: state.Backend):
        self.model = model
        self.backend = backend
        self.said: str | None = None  # "train" / "eval" once the script called train() / eval() on it
        self.captured_training: bool | None = None  # the module's training flag when the program was captured

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    @property
    def device(self):
        """What the math runs on (the backend's device), for `tensor.to(compiled_model.device)`."""
        return self.backend.device

    def train(self, mode: bool = True) -> "CompiledModel":
        """Say the run's mode and set the module's; refused once the run's program was compiled
        for the other mode, or with the module in the other state."""
        run_mode = state.current().run.mode
        call = f"compiled_model.{'train' if mode else 'eval'}()"
        if run_mode is not None and run_mode != ("train" if mode else "eval"):
            raise mode_change(call, run_mode)
        if run_mode is not None and self.captured_training is not None and self.captured_training != mode:
            raise module_switched(call, self.captured_training)
        self.said = "train" if mode else "eval"
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


def module_switched(what: str, was_training: bool) -> ReprogramForbidden:
    return ReprogramForbidden(
        f"{what} after the first step: the program was captured with the module in "
        f"{'training' if was_training else 'eval'} mode (its dropout, batch-norm statistics and every other "
        f"mode-dependent layer as they were then), and the fabric cannot be reprogrammed in this run.",
        "Set the module's mode before the first step (compiled_model.eval() or .train()), or start a new run.")


def check_modes(models: list, run_mode: str) -> None:
    """Refuse a step when a compiled model's module was switched (`model.eval()` on the module
    itself) since the program was captured: to the run's other mode, or away from the state the
    program was captured in."""
    for m in models:
        if m.captured_training is not None and m.model.training != m.captured_training:
            now = "train" if m.model.training else "eval"
            what = f"{type(m.model).__name__}.{now}()"
            raise mode_change(what, run_mode) if now != run_mode else module_switched(what, m.captured_training)


def run_mode(models: list, trains: bool, step_name: str) -> str:
    """The run's mode, decided at the first step: the program's — "train" if the step computes a
    gradient or updates a parameter (`trains`), else "eval" (a forward under torch.no_grad(), as
    R1.8's eval runner writes it) — which what the script said (compiled_model.train() / .eval())
    must agree with. Records each module's training flag: the state the program is captured in."""
    said = {m.said for m in models if m.said is not None}
    if len(said) > 1:
        raise InvalidState("The compiled models disagree on train/eval mode: compiled_model.train() was called "
                           "on one and .eval() on another.",
                           "Call .train() (or .eval()) on every compiled model of the run alike.")
    mode = "train" if trains else "eval"
    if said and said != {mode}:
        if mode == "train":
            raise IncompatibleProgram(
                f"compiled_model.eval() was called, but the step {step_name!r} computes gradients or updates "
                f"parameters (a training program): {TRAIN_AND_EVAL_RULE}.",
                "To evaluate, leave the backward and the optimizer step out of the step (run it under "
                "torch.no_grad()); to train, call compiled_model.train(), or neither: the mode follows the step.")
        raise IncompatibleProgram(
            f"compiled_model.train() was called, but the step {step_name!r} computes no gradient and updates no "
            f"parameter (an evaluation program): {TRAIN_AND_EVAL_RULE}.",
            "To train, call loss.backward() and the optimizer's step inside the step; to evaluate, call "
            "compiled_model.eval(), or neither: the mode follows the step.")
    for m in models:
        m.captured_training = m.model.training
    return mode


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
    if config.execution_strategy not in (None, execmode):  # configure's, recorded: it must agree at least
        raise InvalidArgument(
            f"compile: backend {backend!r} compiles for {execmode}, but configure's execution_strategy says "
            f"{config.execution_strategy}.",
            "Pass the ExecutionStrategy of the backend (ES_WEIGHT_STREAMING for 'wse_ws'), or none.")
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
        if not hasattr(model, "device"):  # a model of its own `device` (a property, e.g.) keeps it
            model.device = process.device
    process.models.append(compiled)
    return compiled
