"""What the later releases' code, written against torch 2.4, needs of this project's torch.

One thing today: torch's pytree TreeSpec is a dataclass whose fields are `type`, `_context` and
`_children`, but since torch 2.5 its __init__ takes `(type, context, children_specs)`, so
`dataclasses.replace(spec, ...)` — which passes every field by its name — raises `TypeError:
TreeSpec.__init__() got an unexpected keyword argument '_context'`. ModelZoo 2.10's trainer does
exactly that each time it saves its params (trainer/validate.py), so no `cszoo fit` could start.
accept_dataclass_fields() lets TreeSpec's __init__ take its fields' names too, the positional
names winning; nothing else of TreeSpec changes. `python -m csadmin.cstorch` applies it to the
process it runs a script in; nothing else does.
"""

from __future__ import annotations

from torch.utils._pytree import TreeSpec

_UNSET = object()


def accept_dataclass_fields() -> None:
    """Let TreeSpec(...) take `_context` and `_children` as dataclasses.replace passes them
    (idempotent)."""
    plain = TreeSpec.__init__
    if getattr(plain, "_takes_fields", False):
        return

    def __init__(self, type, context=_UNSET, children_specs=_UNSET, *, _context=_UNSET, _children=_UNSET):
        context = _context if context is _UNSET else context
        children_specs = _children if children_specs is _UNSET else children_specs
        if context is _UNSET or children_specs is _UNSET:
            raise TypeError("TreeSpec(type, context, children_specs): context and children_specs are required")
        plain(self, type, context, children_specs)

    __init__._takes_fields = True
    TreeSpec.__init__ = __init__
