"""`cstorch.name_scope`, `set_debug_scope`, `add_debug_name`, `get_debug_name`: the names the
real package gives traced operations and modules in its compiled graph, for debugging.

    with cstorch.name_scope("grad_norm"):        # ops traced in the body are named under it
        norm = torch.linalg.vector_norm(...)
    cstorch.current_backend_impl().current_scope_name    # ScopeName("grad_norm") in it, else None
    cstorch.set_debug_scope("eval")              # every later traced op's debug name starts "eval"
    cstorch.add_debug_name(model)                # model.fc1._debug_name == "fc1", and so on down
    cstorch.get_debug_name(model.fc1)            # "fc1"; a module never named: its class name

Names are recorded, nothing else: they change no value a step computes. `name_scope` sets the
backend's `current_scope_name` for the body and restores the one before it afterwards (an inner
scope replaces the outer one, as the real backend's does), and needs a backend (InvalidState
before one is made, as in the real package). `set_debug_scope` sets the process's debug scope
(`backend.debug_scope`; None or "" clears it). `add_debug_name` writes `_debug_name` on the
module and every submodule: the dotted path of submodule names from `root_name` (default "").
The real package also names modules that were never named by class and instance while it
traces (module_1, …): here an unnamed module's debug name is its class name.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Optional

import torch

from csadmin.errors import InvalidArgument

from ..backend import current_backend_impl, process_backend


@dataclass
class ScopeName:
    """A traced op's scope: the scope's name, and for a module's hooks its pass ("fwd", "bwd")
    and function; shown dotted (str)."""

    scope_name: Optional[str] = None
    scope_type: Optional[str] = None
    scope_func: Optional[str] = None

    def __str__(self) -> str:
        return ".".join(part for part in (self.scope_name, self.scope_type, self.scope_func) if part)


def _text(what: str, value) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{what} must be a string, not {type(value).__name__} {value!r}.",
                              hint="Name the scope with a string, e.g. cstorch.name_scope(\"grad_norm\").")
    return value


@contextlib.contextmanager
def name_scope(name: str, raw: bool = False):
    """Name the operations traced in the body `name` (see the module docstring); `raw` is the
    real signature's and changes nothing there either."""
    backend = current_backend_impl()
    before = backend.current_scope_name
    backend.current_scope_name = ScopeName(_text("cstorch.name_scope: the name", name))
    try:
        yield
    finally:
        backend.current_scope_name = before


def set_debug_scope(name: Optional[str]) -> None:
    """Every later traced operation's debug name starts with `name`; None or "" clears it."""
    process_backend.current().debug_scope = _text("cstorch.set_debug_scope: the name", name or "")


def add_debug_name(module: torch.nn.Module, root_name: Optional[str] = None) -> None:
    """Write `_debug_name` on `module` (`root_name`, default "") and on every submodule below it
    (the dotted path of submodule names from there)."""
    if not isinstance(module, torch.nn.Module):
        raise InvalidArgument(f"cstorch.add_debug_name expects a torch.nn.Module, got {type(module).__name__}.",
                              hint="Pass the model (or a submodule of it).")
    root = _text("cstorch.add_debug_name: root_name", root_name or "")
    stack = [(module, root)]
    while stack:
        current, name = stack.pop()
        current._debug_name = name
        stack.extend((child, ".".join(filter(None, (name, child_name))))
                     for child_name, child in current.named_children())


def get_debug_name(module: torch.nn.Module) -> str:
    """`module`'s debug name: its `_debug_name` when set and not empty, else its class name."""
    return getattr(module, "_debug_name", None) or type(module).__name__
