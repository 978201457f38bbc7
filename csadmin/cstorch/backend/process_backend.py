"""The process's cstorch backend: everything cstorch knows in this process, in one object.

    backend = process_backend.current()    # this process's Backend (made at the first use)
    backend.config                         # cstorch.configure's Config; None before it
    backend.run                            # the run in progress (run.Run): its program, steps, end
    backend.in_step()                      # True while a compile_step function runs
    backend.check_weights_fetch("model")   # raises on a step that is not a checkpoint step
    backend.name, backend.is_wse()         # what scripts ask of it (compiled_model.backend, cstorch.backend())
    backend.device                         # where tensors live: `with backend.device:` builds the model there
    backend.torch_device                   # the torch.device the math runs on, for tensor.to(...)
    process_backend.reset()                # end the run still open, forget everything (tests)

One process holds one backend, as the real API's `cstorch.backend()` is process-wide; the
backend holds its settings (the configuration, the half dtype), what outlives a run (the compiled
models, the link to csd, the library objects that describe the run) and the run in progress.
The runtime (configure, compile, compile_step, the DataLoader's iterator) writes it; the library
classes (optimizers, schedulers, metrics, the grad scaler) only read it, through the queries
below, so none of them reaches into another's attributes.

It is also the object scripts hold: R1.8's `compiled_model.backend` (`.name`, `.is_wse()`,
`.is_gpu()`, `.device`, `str()` the name compiled for) and the later releases' `cstorch.backend()` (`.is_csx`,
`.is_cpu`, `.is_gpu` as properties): `is_csx` and `is_cpu` are booleans, as the later releases'
are; `is_wse` and `is_gpu`, names of both releases, are Flags, true or false as a property and
callable as a method, so both spellings read the same object. `cstorch.Backend` is this class
(for isinstance); a script makes it with `cstorch.backend(...)`, never by calling the class.

The later releases' `cstorch.backend("CSX" | "CPU" | "GPU", ...)` (backend/__init__.py) fills this same
object: `kind` says what runs the math, `executor_required` that steps run inside a DataExecutor,
`executor` the DataExecutor whose loop is running (one at a time) and `csx` the
`cstorch.backends.csx` settings (backend/csx_settings.py).

This module holds the process's one reference to it (`current()`), and `reset()` is the one way
to start afresh: it ends the run as the process's end would and drops every setting, the
optimizer guard included. Stdlib only: importing it never imports torch.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import dataclasses
import itertools
import os
import weakref
from typing import NamedTuple

from csadmin.errors import InvalidState

from .backend_type import BackendFacts
from .csx_settings import CsxSettings
from .run import Run

# 004, "Saving/Loading Checkpoints": weights may be fetched only on configured checkpoint steps.
WEIGHTS_RULE = (
    "It is only possible to fetch weights on predetermined checkpoint steps configured in "
    "cstorch.configure"
)
class WorkerInfo(NamedTuple):
    """Which input worker this process is (cstorch.utils.data.worker_info())."""

    task_id: int  # this worker's index, 0 … num_tasks - 1
    num_tasks: int  # how many input workers feed the run


class Flag:
    """A yes/no answer that reads as a property (`if backend.is_cpu:`) and as a method
    (`backend.is_wse()`), the two releases' spellings of the same question."""

    __slots__ = ("_value",)

    def __init__(self, value: bool):
        self._value = bool(value)

    def __bool__(self) -> bool:
        return self._value

    def __call__(self) -> bool:
        return self._value

    def __eq__(self, other) -> bool:
        return self._value == bool(other)

    def __hash__(self) -> int:
        return hash(self._value)

    def __repr__(self) -> str:
        return repr(self._value)


# What runs the math, by the backend names scripts give (compile's, backend()'s), upper case.
KINDS = {"WSE_WS": "CSX", "WSE_PL": "CSX", "CSX": "CSX", "WSE": "CSX", "CPU": "CPU", "GPU": "GPU"}


class Backend(BackendFacts):
    """This process's cstorch state (see the module docstring). Made empty; filled in as the
    script configures, compiles and steps. BackendFacts adds the later releases' read-only
    answers (`backend_type`, `is_e2e_execution`, `is_tracing`, `compile_only`, …)."""

    def __init__(self, *args, **kwargs):
        if args or kwargs:  # the real package's Backend(BackendType.CSX, ...) makes the backend
            raise InvalidState("cstorch.Backend(...) is not constructed directly here.",
                               hint='Make the backend with cstorch.backend("CSX" | "CPU" | "GPU", ...).')
        self.config = None  # config.Config, once cstorch.configure ran
        self.half_dtype = "float16"  # amp.precision's setting, by name
        self.mixed_precision = False  # amp.floating_point's flag: set_half_dtype turns it on
        self.target: str | None = None  # the compile backend's name ("wse_ws"), once compiled
        self.execmode: str | None = None  # the execution mode it targets
        self.models: list = []  # core/compile.py's CompiledModel, in compile order
        self.csd = None  # csd_link.CsdLink, once cstorch.compile reached csd
        self.cluster = None  # a CSX backend's cluster.Cluster (the later releases' `backend.cluster`)
        # The real CSX backend's appliance client, whose compile response counts the program's FLOPs
        # (ModelZoo's FlopUtilization reads it when there is one): csd's compile counts none.
        self.appliance = None
        self.run = Run()  # the run in progress (or the last one, ended)
        self.worker = WorkerInfo(0, 1)  # an input worker process says who it is
        self.is_input_worker = False  # … and that it is one (cstorch.distributed.is_streamer())
        self.input_role = None  # `python -m csadmin.cstorch` in an input-only role (__main__)
        self.worker_state = None  # the DataLoaderCheckpoint get_worker_state() answers once, inside a
        # restartable dataloader's state_dict (utils/data/restartable.py offers it for that call)
        self.optimizer_guard = None  # torch's hook handle (optim/core_guard.py), once installed
        self.executor_required = False  # made by cstorch.backend(): steps run inside a DataExecutor
        self.executor = None  # the DataExecutor whose loop is running (utils/data/data_executor.py)
        self.executors_run = 0  # DataExecutors iterated so far: their artifact directories' numbers
        self.csx = CsxSettings()  # cstorch.backends.csx: precision, performance, debug
        self.current_scope_name = None  # cstorch.name_scope's (core/name_scope.py), in its body
        self.debug_scope = ""  # cstorch.set_debug_scope's: traced ops' debug names start with it
        self.stack_state = None  # R1.8's cbtorch.state() (core/r18/stack.py), made when first asked for
        self.annotations: dict = {}  # config class → (config, attribute) of the active core.annotation ones
        # Hooks by handle id (torch's RemovableHandle holds its dict weakly: an OrderedDict, not a dict).
        self.before_tensor_to_cpu_hooks = collections.OrderedDict()  # backend/ltc_backend.py's
        self.after_tensor_to_cpu_hooks = collections.OrderedDict()
        self.traced_tensor_hooks = collections.OrderedDict()  # experimental/listener.py's
        self._device = None  # device.Device, made when first asked for
        self._stepping = False
        self._announced: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # object → order
        self._order = itertools.count()

    # -- what scripts ask of it ----------------------------------------------------------------

    @property
    def name(self) -> str | None:
        """The backend's name as the script gave it, upper case ("WSE_WS", "CSX"); None before."""
        return None if self.target is None else self.target.upper()

    @property
    def kind(self) -> str | None:
        """What runs the math: "CSX" (the system, csd), "CPU" or "GPU"; None before compile."""
        return None if self.target is None else KINDS.get(self.target.upper())

    # The later releases' is_csx and is_cpu are plain booleans, as theirs are (a script passes them
    # where torch wants a bool: torch.autocast(..., enabled=backend.is_csx)); is_wse and is_gpu,
    # R1.8's methods too, are Flags.
    is_csx = property(lambda self: self.kind == "CSX")
    is_wse = property(lambda self: Flag(self.kind == "CSX"))  # R1.8's name for the same question
    is_cpu = property(lambda self: self.kind == "CPU")
    is_gpu = property(lambda self: Flag(self.kind == "GPU"))

    def __str__(self) -> str:
        return self.target or "(no backend yet)"

    @property
    def device(self):
        """Where the model's tensors live (device.Device): a context manager to build the model
        in (`with backend.device:`), as the real backend's device is."""
        if self._device is None:
            from .device import Device  # torch: imported when a script asks, never by state itself

            self._device = Device(self.kind or "CSX")
        return self._device

    @property
    def torch_device(self):
        """The torch.device the math runs on ("cpu"; "cuda" for a GPU backend), for
        `tensor.to(...)`: what `compiled_model.device` and R1.8's `model.device` are."""
        return self.device.torch_device

    @property
    def artifact_dir(self) -> str | None:
        """The later releases' name for the model directory (configure's model_dir)."""
        return None if self.config is None else self.config.model_dir

    @property
    def _impl(self) -> "Backend":
        """The real package's Backend is a front for its implementation object, `_impl`, which
        ModelZoo reads (`backend._impl.is_e2e_execution`); here they are one object."""
        return self

    @artifact_dir.setter
    def artifact_dir(self, value) -> None:
        """Move where the backend's runs write from now on (ModelZoo's trainer points it at its
        timestamped `model_dir/cerebras_logs/<time>`), made if missing; the compile directory stays."""
        path = os.path.abspath(os.fspath(value))
        os.makedirs(path, exist_ok=True)
        self.config = dataclasses.replace(self.require_config(), model_dir=path)

    def parameters(self) -> list:
        """The compiled models' parameters, each once, in compile order (what a step trains)."""
        return list({id(p): p for m in self.models for p in m.parameters()}.values())

    def run_dir(self) -> str:
        """Where the run in progress writes (performance.json, its yaml, TensorBoard): a
        DataExecutor's own directory, else the model directory."""
        return self.run.model_dir or self.require_config().model_dir

    # -- settings ------------------------------------------------------------------------------

    def require_config(self):
        """The configuration; InvalidState before cstorch.configure."""
        if self.config is None:
            raise InvalidState(
                "cstorch.configure has not been called in this process.",
                "Call cstorch.configure(...) first, before the model is instantiated (004, 'Configuring a run').")
        return self.config

    # -- what the library reads ----------------------------------------------------------------

    def in_step(self) -> bool:
        """True while a `compile_step` function runs, at capture or replay."""
        return self._stepping

    @contextlib.contextmanager
    def stepping(self):
        """Mark the body as the inside of a step (the runtime wraps each step in it)."""
        before = self._stepping
        self._stepping = True
        try:
            yield
        finally:
            self._stepping = before

    def announce(self, obj) -> None:
        """A library object the run's records describe (an optimizer, a scheduler, a DataLoader)
        says it exists; the model directory's yaml and TensorBoard read them back. Weakly held:
        announcing keeps nothing alive."""
        self._announced.setdefault(obj, next(self._order))

    def announced(self, kind: type) -> list:
        """The announced objects that are `kind`s, oldest first."""
        return sorted((o for o in list(self._announced) if isinstance(o, kind)), key=self._announced.get)

    def is_checkpoint_step(self, step: int | None = None) -> bool:
        """Whether weights may be fetched after `step` (default: the run's last completed step):
        before any step, on a multiple of `checkpoint_steps`, or on the run's last step."""
        run = self.run
        step = run.step if step is None else step
        if step == run.first_step:
            return True
        if run.executor is not None:  # a DataExecutor's run: its schedule, and its final weights after it
            return not run.in_loop or run.checkpoint_schedule.match(step - run.first_step - 1)
        if run.last_step is not None and step == run.last_step:
            return True
        every = self.checkpoint_steps
        return bool(every) and step % every == 0

    @property
    def checkpoint_steps(self) -> int:
        return 0 if self.config is None else self.config.checkpoint_steps

    def check_weights_fetch(self, what: str) -> None:
        """Refuse fetching `what`'s weights (a model's or an optimizer's `state_dict()`) on a
        step that is not a checkpoint step, with the document's rule (the system's rule: a CPU or
        GPU backend holds its weights in this process)."""
        if self.kind not in (None, "CSX"):
            return
        if self.run.executor is not None and not self.is_checkpoint_step():
            schedule = self.run.checkpoint_schedule
            raise InvalidState(
                f"Cannot fetch the {what}'s weights after step {self.run.step - self.run.first_step} of this "
                f"DataExecutor's run: weights are only available on its checkpoint steps "
                f"({schedule.describe(self.run.last_step - self.run.first_step)}).",
                hint="Save them with cstorch.save in a function decorated with @cstorch.checkpoint_closure: "
                     "call it every step, it runs only on the DataExecutor's checkpoint steps.")
        if not self.is_checkpoint_step():
            every = self.checkpoint_steps
            raise InvalidState(
                f"Cannot fetch the {what}'s weights after step {self.run.step}: {WEIGHTS_RULE} "
                f"(checkpoint_steps={every}).",
                hint=f"Fetch weights in a step closure on a step that is a multiple of checkpoint_steps "
                     f"({every}), or on the last step." if every else
                     "Set checkpoint_steps in cstorch.configure, or fetch weights on the last step.")

    # -- the end -------------------------------------------------------------------------------

    def close(self) -> None:
        """End the run still open as the process's end does, remove the optimizer guard and
        close the link to csd. The backend is then spent: `reset()` makes the next one."""
        try:
            self.run.end_of_process()
        finally:
            if self.optimizer_guard is not None:
                self.optimizer_guard.remove()
                self.optimizer_guard = None
            if self.csd is not None:
                self.csd.shutdown()


_backend = Backend()


def current() -> Backend:
    """This process's backend."""
    return _backend


def reset() -> Backend:
    """Close the current backend (its open run ends as at the process's end) and start a new,
    empty one (tests; a new script in the same process). Returns the new backend."""
    global _backend
    old, _backend = _backend, Backend()
    old.close()
    return _backend


def close_at_exit() -> None:
    """Once a run is open: end it when the process ends, whatever ends it (registered once)."""
    atexit.unregister(_at_exit)
    atexit.register(_at_exit)


def _at_exit() -> None:
    _backend.close()
