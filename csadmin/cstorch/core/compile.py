"""`cstorch.compile(model, backend=...)`: prepare a model for the backend and check the system.

It prepares the model for the backend (wraps it, below; a GPU backend moves it to the CUDA device)
and checks the system now — csd reachable, ACTIVE, running the execution mode the backend names —
so a mismatch is refused before any step. The program itself is compiled at the run's first step
by core/compiler.py (004: "the actual compilation does not happen until the first iteration is
complete and the batch size is known"). BACKENDS maps the names (any case): "wse_ws" is weight
streaming (the document's name), "wse_pl" pipelined (ours: the real API names only "wse_ws").

The model itself is returned wrapped (CompiledModel: call it, train()/eval() it); the original
module's `state_dict()` now asks the backend's check_weights_fetch("model") first, so weights are only
fetched on checkpoint steps, its `load_state_dict(..., assign=True)` is refused (assigning would
replace the tensors the run's program updates by identity; the real package refuses it too), and
it gets a `device` attribute (the backend's torch device, as R1.8's
`torch.tensor(0.0).to(model.device)` reads it) unless it has one.

The run's mode is decided at the first step (`run_mode`): the step's program says it (a backward or
a parameter update makes a training program, a forward alone an evaluation one), and a
`compiled_model.train()` / `.eval()` the script called must agree with it (001: a run is train or
eval). After that first step, neither mode nor module state may change (`check_modes`) while the
run lasts; a DataExecutor's run that ended frees them for the next.

The later releases' forms: `compile(model, backend)` with the backend `cstorch.backend(...)` made,
`compile(model, "CSX" | "CPU" | "GPU")` (which makes it, as the real package does) and
`compile(model)` (the backend made before; with none, the first release's "wse_ws" after
configure, else a CPU backend). A CPU or GPU backend contacts no system and checks no wafer rule
(float32 weights included); GPU moves the model to the CUDA device.
"""

from __future__ import annotations

import torch

from csadmin.errors import IncompatibleProgram, InvalidArgument, InvalidState, ReprogramForbidden

from ..backend import process_backend
from ..amp.precision import check_float32_weights
from ..backend.csd_link import CsdLink

BACKENDS = {"wse_ws": "WEIGHT_STREAMING", "wse_pl": "PIPELINED"}

# 001, "Modes".
TRAIN_AND_EVAL_RULE = (
    "a run is train or eval, never both: mode train_and_eval is not supported because the fabric "
    "cannot be reprogrammed for eval after having been programmed for train in the same run"
)


def _weights_hook(module, prefix, keep_vars):
    process_backend.current().check_weights_fetch("model")


def _assign_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
    if local_metadata.get("assign_to_params_buffers", False):
        raise InvalidState("Cannot call model.load_state_dict(..., assign=True) on a model that has already been "
                           "compiled: assigning replaces the tensors the system's program updates.",
                           hint="Please call with assign=False (the values are copied into the compiled model's "
                                "tensors).")


class CompiledModel:
    """A model prepared for the system: call it inside a compile_step function. `backend` is the
    process's backend (process_backend.Backend: `.name`, `.is_wse()`, `.device`, `str()` the name compiled for)."""

    def __init__(self, model: torch.nn.Module, backend: process_backend.Backend):
        self.model = model
        self.backend = backend
        self.said: str | None = None  # "train" / "eval" once the script called train() / eval() on it
        self.captured_training: bool | None = None  # the module's training flag when the program was captured

    def __call__(self, *args, **kwargs):
        return self.model(*args, **kwargs)

    @property
    def device(self):
        """The torch device the math runs on (the backend's), for `tensor.to(compiled_model.device)`."""
        return self.backend.torch_device

    def train(self, mode: bool = True) -> "CompiledModel":
        """Say the run's mode and set the module's; refused while a run's program compiled for the
        other mode runs, or with the module in the other state."""
        run = process_backend.current().run
        run_mode = None if run.finished and run.executor is not None else run.mode
        call = f"compiled_model.{'train' if mode else 'eval'}()"
        if run_mode is not None and run_mode != ("train" if mode else "eval"):
            raise _mode_change(call, run_mode)
        if run_mode is not None and self.captured_training is not None and self.captured_training != mode:
            raise _module_switched(call, self.captured_training)
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


def _mode_change(what: str, run_mode: str) -> IncompatibleProgram:
    return IncompatibleProgram(
        f"{what} after this run's program was compiled for {run_mode}: {TRAIN_AND_EVAL_RULE}.",
        "Run training and evaluation in separate processes (one run each; evaluate a checkpoint).")


def _module_switched(what: str, was_training: bool) -> ReprogramForbidden:
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
            raise _mode_change(what, run_mode) if now != run_mode else _module_switched(what, m.captured_training)


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


def _parse_backend(backend) -> str:
    key = backend.strip().lower() if isinstance(backend, str) else None
    if key not in BACKENDS:
        raise InvalidArgument(f"compile: unknown backend {backend!r}.",
                              f"Use one of {', '.join(repr(b) for b in BACKENDS)} "
                              f"({', '.join(BACKENDS.values())}).")
    return key


def _later_backend(process: process_backend.Backend, backend) -> str | None:
    """The process backend's name when `backend` is the later releases' (a Backend, one of their
    type names, or None with such a backend made), making it if asked by name; else None."""
    from ..backend import backend as make_backend, backend_kind
    from ..backend.backend_type import BackendType

    if isinstance(backend, process_backend.Backend):
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
    if isinstance(backend, str) and backend.strip().upper() in BackendType.__members__ and not configured:
        kind = backend_kind(backend)
        if process.target is None:
            make_backend(kind)
        elif process.kind != kind:
            raise InvalidState(f"compile: backend {backend!r}, but this process's backend is {process.kind}: one "
                               f"backend per process.", "Compile for the backend cstorch.backend() made.")
        return process.target
    return None


def _accept_appliers(model: torch.nn.Module) -> None:
    """As the real compile does: each submodule's `apply(x)` also takes an object that is not
    callable but has an `apply` method (a cstorch.sparse algorithm: `model.apply(sparsity)`),
    calling `x.apply(module)` once on it, where torch's would call x on every submodule."""
    for module in model.modules():
        if getattr(module.apply, "accepts_appliers", False):
            continue

        def apply(fn, _plain=module.apply, _module=module):
            if not callable(fn) and callable(getattr(fn, "apply", None)):
                return fn.apply(_module)
            return _plain(fn)

        apply.accepts_appliers = True
        module.apply = apply


def compile(model: torch.nn.Module, backend=None) -> CompiledModel:
    """Prepare `model` for the system `backend` names; see the module docstring."""
    process = process_backend.current()
    later = _later_backend(process, backend)
    config = process.require_config()
    if not isinstance(model, torch.nn.Module):
        raise InvalidArgument(f"compile: model must be a torch.nn.Module, not {type(model).__name__}.",
                              "Pass the model instance (e.g. cstorch.compile(model, backend='wse_ws')).")
    _accept_appliers(model)
    if later in ("CPU", "GPU"):  # no system, no wafer rule
        compiled = CompiledModel(process.device.move_to_device(model), process)
        _give_device(model, process)
        process.models.append(compiled)
        return compiled
    check_float32_weights(model)  # 001: only mixed precision, weights stored as float32
    key = later or _parse_backend("wse_ws" if backend is None else backend)
    execmode = BACKENDS.get(key, "WEIGHT_STREAMING")
    if config.execution_strategy not in (None, execmode):  # configure's, recorded: it must agree at least
        named = backend if isinstance(backend, str) else key
        raise InvalidArgument(
            f"compile: backend {named!r} compiles for {execmode}, but configure's execution_strategy says "
            f"{config.execution_strategy}.",
            "Pass the ExecutionStrategy of the backend (ES_WEIGHT_STREAMING for 'wse_ws'), or none.")
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
        _give_device(model, process)
    process.models.append(compiled)
    return compiled


def _give_device(model: torch.nn.Module, process) -> None:
    """`model.device`: the backend's torch device, as every backend of the real package sets it
    (ModelZoo's callbacks make tensors `.to(model.device)`); a model of its own `device` (a
    property, e.g.) keeps it."""
    if not hasattr(model, "device"):
        model.device = process.torch_device
