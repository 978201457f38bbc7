"""cstorch.optim.configure_optimizer: an optimizer from a configuration dictionary (004).

    optimizer = cstorch.optim.configure_optimizer(optimizer_type="SGD", params=model.parameters(),
                                                  lr=0.001, momentum=0.5)

The name is matched case-insensitively; an unknown one, or an argument the class does not take,
is an InvalidArgument that lists what is valid.
"""

from __future__ import annotations

import inspect

from csadmin.errors import InvalidArgument

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

OPTIMIZERS: dict[str, type[Optimizer]] = {cls.__name__: cls for cls in (SGD, Adam, AdamW)}


def configure_optimizer(optimizer_type: str, params, **kwargs) -> Optimizer:
    """`optimizer_type`'s class built over `params` with `kwargs`."""
    cls = lookup("optimizer", optimizer_type, OPTIMIZERS)
    return cls(params, **arguments(cls, kwargs))


def lookup(what: str, name, table: dict):
    """`table[name]`, the name matched case-insensitively, else an error listing the valid names."""
    by_lower = {key.lower(): value for key, value in table.items()}
    if isinstance(name, str) and name.lower() in by_lower:
        return by_lower[name.lower()]
    raise InvalidArgument(f"Unknown {what} {name!r}. Valid {what}s: {', '.join(sorted(table))}.")


def arguments(cls, kwargs: dict, skip: int = 1) -> dict:
    """`kwargs` if `cls(...)` takes every one of them (its first `skip` parameters are supplied by
    the caller), else an error naming the ones it does not take and the ones it does."""
    names = list(inspect.signature(cls).parameters)[skip:]
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        raise InvalidArgument(f"{cls.__name__} does not take {', '.join(map(repr, unknown))}; it takes "
                              f"{', '.join(names)}.")
    return kwargs
