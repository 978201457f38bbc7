"""`cstorch.utils.utils`: choosing a model's parameters by name, as the real package's optimizer
configuration and ModelZoo's muP and param-group helpers choose them.

    keep = make_param_filter(["*.bias", "*norm*"])          # glob patterns, matched whole
    [name for name, p in model.named_parameters() if keep(name, p)]
    keep = make_param_filter(lambda name, param: param.ndim == 1)   # a FilterCallable as it is
    pattern = convert_glob_to_regex("layers.*.weight")        # a compiled regex (fnmatch's)

A glob pattern (`*`, `?`, `[…]`, fnmatch's syntax; `*` crosses dots) matches a parameter's whole
name. A callable must take (name, parameter) positionally; anything else is refused, as is a
pattern that is not a string.
"""

from __future__ import annotations

import fnmatch
import inspect
import re
from typing import Callable, List, Union

import torch.nn as nn

from csadmin.errors import InvalidArgument

FilterCallable = Callable[[str, nn.Parameter], bool]


def convert_glob_to_regex(f: str) -> re.Pattern:
    """The glob pattern `f` as a compiled regular expression (fnmatch's translation): its
    `.match()` and `.fullmatch()` tell whether a name matches the whole pattern."""
    if not isinstance(f, str):
        raise InvalidArgument(f"A parameter filter must be a string or a list of strings, got {type(f).__name__} "
                              f"{f!r}.", hint="Write the filter as a glob pattern, e.g. \"*.bias\".")
    return re.compile(fnmatch.translate(f))


def _takes_name_and_param(function: Callable) -> bool:
    try:
        inspect.signature(function).bind("name", None)
    except (TypeError, ValueError):  # wrong arity, or a callable without a signature
        return False
    return True


def make_param_filter(param_filter: Union[str, List[str], FilterCallable]) -> FilterCallable:
    """A FilterCallable for `param_filter`: the callable itself, or one that is True for a
    parameter whose name matches any of the glob patterns."""
    if callable(param_filter):
        if not _takes_name_and_param(param_filter):
            raise InvalidArgument(f"Unknown `param_filter`: {param_filter!r}. Valid options are a string, a list of "
                                  f"strings (glob patterns), or a function taking (name, parameter) and returning "
                                  f"a bool.", hint="Define it as def keep(name, param): ...")
        return param_filter
    if not isinstance(param_filter, (str, list, tuple)):
        raise InvalidArgument(f"Unknown `param_filter`: {param_filter!r}: a string, a list of strings or a function "
                              f"taking (name, parameter).")
    patterns = [convert_glob_to_regex(p) for p in ([param_filter] if isinstance(param_filter, str) else param_filter)]

    def glob_expression_param_filter(name: str, param: nn.Parameter) -> bool:
        return any(pattern.fullmatch(name) for pattern in patterns)

    return glob_expression_param_filter
