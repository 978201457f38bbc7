"""cstorch.sparse.configure: a sparsity Group from a config (ModelZoo's `sparsity:` section, the
real function's forms): a number (static sparsity at that level over the default parameters), a
dict (`algorithm`, default "static"; `param_filter`, default `default_sparse_param_filter`;
`schedule` another name of `sparsity`; the rest the algorithm's arguments) or a list of dicts
(one group each). `groups:`/`params:` nesting, as ModelZoo's config classes give it, is flattened
first."""

import copy
import inspect
from typing import Callable, Dict, List, Union

import torch

from csadmin.errors import InvalidArgument

from .base import SparsityAlgorithm
from .group import Group

SparseParamFilterType = Callable[[str, torch.nn.Parameter], bool]


def default_sparse_param_filter(name: str, param: torch.nn.Parameter) -> bool:
    """Whether a parameter is sparse by default: more than 1-D and not an embedding, a norm, the
    lm_head or a position-embedding helper."""
    name = name.lower()
    if param is None or len(param.shape) <= 1:
        return False
    return not any(part in name for part in ("embedding", "norm", "lm_head", "pe_helper"))


def _subclasses(cls: type) -> list:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_subclasses(sub))
    return found


def map_sparsity_algorithm(algorithm: str) -> type:
    """The SparsityAlgorithm class named `algorithm` (case-insensitive; not a Group)."""
    classes = {cls.__name__.lower(): cls for cls in _subclasses(SparsityAlgorithm)
               if not inspect.isabstract(cls) and not issubclass(cls, Group) and not cls.__name__.startswith("_")}
    found = classes.get(str(algorithm).lower())
    if found is None:
        raise InvalidArgument(f"Unsupported sparsity algorithm: {algorithm}. Supported types: {sorted(classes)}")
    return found


def flatten_sparsity_params(config):
    """Unwrap `groups:` and `params:` sub-dicts (ModelZoo's config classes) into flat dicts."""
    if not isinstance(config, dict) or "groups" not in config:
        return config
    groups = config["groups"]
    unwrap = lambda item: {**{k: v for k, v in item.items() if k not in ("params", "groups")},  # noqa: E731
                           **item.get("params", {})}
    if isinstance(groups, dict):
        return unwrap(groups)
    if isinstance(groups, list):
        return [unwrap(item) for item in groups]
    return groups


def configure(config: Union[float, dict, List[dict]]) -> Group:
    """The Group the config describes (None where its `sparsity` is None)."""
    config = flatten_sparsity_params(config)
    if isinstance(config, (int, float)) and not isinstance(config, bool):
        return configure({"sparsity": config})
    if isinstance(config, (list, tuple)):
        group = Group()
        for item in config:
            part = configure(item)
            if part is not None:
                group.extend(part)
        return group
    if not isinstance(config, dict):
        raise InvalidArgument(f"A sparsity config is a number, a dict or a list of dicts, not {config!r}.")
    return _one(copy.deepcopy(config))


def _one(config: Dict) -> Union[Group, None]:
    if "algorithm" not in config and "type" in config:
        config["algorithm"] = config.pop("type")  # the deprecated key
    cls = map_sparsity_algorithm(config.pop("algorithm", "static"))
    param_filter = config.pop("param_filter", None)
    if "schedule" in config:
        if "sparsity" in config:
            raise InvalidArgument("Cannot specify both 'sparsity' and 'schedule' in the same config")
        config["sparsity"] = config.pop("schedule")
    if config.get("sparsity") is None:
        return None
    algorithm = cls(**config)
    group = Group()
    if param_filter is None:
        group.add(default_sparse_param_filter, algorithm)
    elif isinstance(param_filter, (list, tuple, str)):
        group.add(param_filter, algorithm)
    else:
        raise InvalidArgument(f"filter must be a string or list of strings, got {type(param_filter).__name__}")
    return group
