"""What a compiled program is bound to in the compiled models, checked before every later step.

The program references each persistent tensor by identity and was captured with each
parameter's `requires_grad` as it was (a frozen parameter has no gradient and no update in it).
Two things a script can do between steps would therefore go unseen, the fabric keeping the
program compiled with the old state:

  * `p.requires_grad_(False)` (or True) on a parameter the program uses: the step would keep
    updating the "frozen" weight (or never train the unfrozen one);
  * rebinding what the program reads: `model.fc.weight = nn.Parameter(…)`, `model.ema = new_tensor`,
    `model.fc = nn.Linear(…)`, `load_state_dict(…, assign=True)`: the program keeps the old tensor,
    the new one never trains.

Both are refused at the next step, naming the tensor (001: the fabric is not reprogrammed in a
run). `torch.compile` guards on the same facts and recompiles when they change; a run cannot.
Changing values in place (`with torch.no_grad(): p.copy_(new)`, `load_state_dict`) is followed.

`Bindings.check()` runs every step: identity and flag comparisons over a list built once, no
allocation (O(tensors the program uses + modules)).
"""

from __future__ import annotations

import torch

from csadmin.errors import ReprogramForbidden

NEXT = ("Make such changes before the first step, or start a new run (a new process) for the changed model; "
        "to change values, update the tensor in place (with torch.no_grad(): t.copy_(new)).")


class Bindings:
    """The module slots (`owner.<table>[name] is obj`) and parameter flags a program was captured with."""

    def __init__(self, slots: list, flags: list):
        self._slots = slots  # (a module's table: a dict, name, object, dotted path, compiled model's class)
        self._flags = flags  # (parameter, requires_grad at capture, dotted path, compiled model's class)

    @classmethod
    def of(cls, modules: list[torch.nn.Module], state: list[torch.Tensor]) -> "Bindings":
        """What `state` (the program's persistent tensors) is, within `modules` (the compiled models)."""
        used = {id(t) for t in state}
        slots, flags, seen = [], [], set()
        for model in modules:
            owner_class = type(model).__name__
            named = list(model.named_modules(remove_duplicate=False))
            holders = set()  # paths of the modules holding a tensor the program uses, and their ancestors
            for prefix, module in named:
                dotted = f"{prefix}." if prefix else ""
                for table in (module._parameters, module._buffers, vars(module)):
                    for name, value in list(table.items()):
                        if isinstance(value, torch.Tensor) and id(value) in used:
                            slots.append((table, name, value, dotted + name, owner_class))
                            holders.update(".".join(prefix.split(".")[:k]) for k in range(prefix.count(".") + 2))
                            if isinstance(value, torch.nn.Parameter) and id(value) not in seen:
                                seen.add(id(value))
                                flags.append((value, value.requires_grad, dotted + name, owner_class))
            for prefix, module in named:  # a submodule replaced takes its tensors out of the model
                dotted = f"{prefix}." if prefix else ""
                slots += [(module._modules, name, child, dotted + name, owner_class)
                          for name, child in module._modules.items() if dotted + name in holders]
        return cls(slots, flags)

    def check(self) -> None:
        """Raise ReprogramForbidden if a slot was rebound or a parameter's requires_grad changed."""
        for table, name, obj, path, owner_class in self._slots:
            if table.get(name) is not obj:
                raise _rebound(path, owner_class, obj, table.get(name))
        for p, flag, path, owner_class in self._flags:
            if p.requires_grad is not flag:
                raise ReprogramForbidden(
                    f"Parameter {path!r} of the compiled model {owner_class} had requires_grad={flag} when the "
                    f"program was compiled and has requires_grad={p.requires_grad} now: the fabric holds the "
                    f"program compiled with it {'trainable' if flag else 'frozen'} (its "
                    f"{'gradient and update are' if flag else 'lack of a gradient is'} part of the program) and "
                    f"cannot be reprogrammed in this run.", NEXT)


def _rebound(path: str, owner_class: str, old, new) -> ReprogramForbidden:
    if isinstance(old, torch.nn.Module):
        what = (f"Submodule {path!r} of the compiled model {owner_class} was replaced after the first step "
                f"({type(old).__name__} → {type(new).__name__})")
        held = "its old parameters"
    else:
        kind = "Parameter" if isinstance(old, torch.nn.Parameter) else "Tensor"
        other = "tensor" if isinstance(new, torch.Tensor) else type(new).__name__
        now = "removed" if new is None else f"rebound to another {other}"
        what = f"{kind} {path!r} of the compiled model {owner_class} was {now} after the first step"
        held = "the old tensor"
    return ReprogramForbidden(
        f"{what}: the fabric holds the program compiled with {held}, which it would keep using; the new "
        f"one would never be read or trained, and the fabric cannot be reprogrammed in this run.", NEXT)
