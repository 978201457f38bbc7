"""R1.8's compile-stack state (`cerebras_pytorch.state()`, `cerebras_pytorch.env()`), its
`cerebras_pytorch.nn.Scope` (and its StripPadding, refused when applied), and the autogen policies of
`cerebras_appliance.pb.stack.autogen_pb2`.

    state = cbtorch.state()
    state.full_config.matching.autogen_policy = AP_DISABLED    # a compiler setting: recorded
    state.track_object({"total": metric_total})                # tensors the step updates
    cbtorch.env().weight_streaming_mode                         # True for a weight streaming run
    scope = cbtorch.nn.Scope("LOSS"); x = scope(x); ...; y = scope.exit(y)

The compiler settings (`full_config`) and scopes steer the real compiler's kernel choices; none
changes a value a step computes, and csd's compile has no such choices, so the settings are kept
(`full_config.settings()`) and the first one set says, once, that it changes nothing here. Scopes
hand their tensors through unchanged. `track_object` checks that what it is given is tensors
(nested in lists, tuples and dicts) and keeps their names: the capture already carries every
tensor a step updates in place as the program's state (core/capture.py).
"""

from __future__ import annotations

import enum
import warnings

import torch
from torch.utils._pytree import tree_flatten

from csadmin.cstorch.backend import process_backend
from csadmin.errors import InvalidArgument

NO_EFFECT = ("cbtorch.state().full_config.{}: the real compiler's setting is kept (full_config.settings()) and changes "
             "nothing (csd's compile has no kernel choices).")


class AutogenPolicy(enum.IntEnum):
    """The stack's autogen policies (appliance.AUTOGEN_POLICIES by name)."""

    AP_DEFAULT = 0
    AP_DISABLED = 1
    AP_MEDIUM = 2
    AP_AGGRESSIVE = 3


AP_DEFAULT, AP_DISABLED, AP_MEDIUM, AP_AGGRESSIVE = AutogenPolicy


class StackConfig:
    """One section of the compiler's configuration: setting a name records it under its dotted
    path in the root's settings; reading it gives the value set, else its subsection."""

    def __init__(self, path: str = "", settings: dict | None = None):
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_settings", {} if settings is None else settings)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        key = self._path + name
        return self._settings[key] if key in self._settings else StackConfig(key + ".", self._settings)

    def __setattr__(self, name: str, value) -> None:
        key = self._path + name
        if not self._settings:
            warnings.warn(NO_EFFECT.format(key), stacklevel=2)
        self._settings[key] = value

    def settings(self) -> dict:
        """Every setting made, by dotted path."""
        return dict(self._settings)


class StackState:
    """The process's compile-stack state, as R1.8's `cbtorch.state()` is."""

    def __init__(self):
        self.full_config = StackConfig()
        self.tracked: dict = {}  # name -> tensor, of the objects the script tracked

    @property
    def is_inside_execution_loop(self) -> bool:
        """True while a compiled step runs (where metrics may not be created)."""
        return process_backend.current().in_step()

    def track_object(self, obj, force: bool = False) -> None:
        """Take `obj`'s tensors (nested lists, tuples, dicts) as outputs the step updates.
        `force` is the real signature's (track again what was tracked) and changes nothing."""
        leaves, _ = tree_flatten(obj)
        bad = [leaf for leaf in leaves if leaf is not None and not isinstance(leaf, torch.Tensor)]
        if bad:
            raise InvalidArgument(f"track_object: {type(bad[0]).__name__} is not a tensor.",
                                  "Track tensors, in lists, tuples or dicts of them.")
        self.name_tensors({f"tracked/{len(self.tracked) + i}": t for i, t in enumerate(leaves) if t is not None})

    def name_tensors(self, named: dict) -> None:
        """Keep `named` (name -> tensor) among the tracked tensors."""
        self.tracked.update(named)


class StackEnv:
    """R1.8's `cbtorch.env()`: the execution strategy of the run."""

    @property
    def weight_streaming_mode(self) -> bool:
        """True when the run is configured or compiled for weight streaming."""
        backend = process_backend.current()
        if backend.execmode is not None:
            return backend.execmode == "WEIGHT_STREAMING"
        config = backend.config
        return config is not None and config.execution_strategy in (None, "WEIGHT_STREAMING")


class Scope:
    """`cbtorch.nn.Scope(scope_name)`: marks the tensors entering (`scope(x)`) and leaving
    (`scope.exit(y)`) a region the real compiler treats as a whole (an attention kernel, the
    loss). Each tensor is handed through unchanged."""

    def __init__(self, scope_name: str):
        if not isinstance(scope_name, str) or not scope_name:
            raise InvalidArgument(f"nn.Scope: scope_name must be a non-empty string, not {scope_name!r}.",
                                  "Name the scope, e.g. Scope('LOSS').")
        self.scope_name = scope_name

    def __call__(self, tensor):
        return tensor

    def exit(self, tensor):
        return tensor


class StripPadding(torch.nn.Module):
    """R1.8's `cbtorch.nn.StripPadding()`, Variable Tensor Shape (a model's `enable_vts`):
    `vts(tensor, mask)` has the system skip the padding tokens. R1.8 runs it in Layer Pipelined
    execution only (t5's and transformer's READMEs), and the cstorch flow compiles for weight
    streaming (WSE_WS): building one is allowed (ModelZoo builds it whatever the mode, and its
    models skip it in eval), applying one is refused (InvalidArgument) naming the setting to change."""

    def forward(self, tensor, mask):
        raise InvalidArgument("cerebras_pytorch.nn.StripPadding (Variable Tensor Shape, the model's `enable_vts`) "
                              "runs in Layer Pipelined execution only; ModelZoo's cstorch flow compiles for weight "
                              "streaming (backend WSE_WS), which does not take it.",
                              "Set `enable_vts: False` in the params' model section.")


def state() -> StackState:
    """The process's compile-stack state (kept on the process's backend: a reset drops it)."""
    backend = process_backend.current()
    if backend.stack_state is None:
        backend.stack_state = StackState()
    return backend.stack_state


def env() -> StackEnv:
    """The process's execution environment."""
    return StackEnv()
