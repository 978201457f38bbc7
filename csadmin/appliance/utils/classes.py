"""`cerebras.appliance.utils.classes`: retrieve_all_subclasses (ModelZoo's config validation
lists the optimizers, callbacks and loggers it may build with it)."""

from __future__ import annotations


def retrieve_all_subclasses(cls, condition=None):
    """Every subclass of `cls`, depth first, that `condition` (None: any) accepts; the
    subclasses of a rejected one are still visited."""
    for sub in cls.__subclasses__():
        if condition is None or condition(sub):
            yield sub
        yield from retrieve_all_subclasses(sub, condition)
