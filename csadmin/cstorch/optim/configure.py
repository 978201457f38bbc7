"""cstorch.optim.configure_optimizer / configure_lr_scheduler: an optimizer, or a learning-rate
schedule, from a configuration dictionary (004).

    optimizer = cstorch.optim.configure_optimizer(optimizer_type="SGD", params=model.parameters(),
                                                  lr=0.001, momentum=0.5)
    scheduler = cstorch.optim.configure_lr_scheduler(optimizer, learning_rate=[
        {"scheduler": "LinearLR", "initial_learning_rate": 0.0, "end_learning_rate": 0.1, "total_iters": 100},
        {"scheduler": "CosineDecayLR", "initial_learning_rate": 0.1, "end_learning_rate": 0.0, "total_iters": 900},
    ])

A schedule may also use R1.8 ModelZoo's keys: `steps` (or `decay_steps`) for `total_iters`, and
`alpha`, which R1.8's schedules never read (a warning says so). Names are matched
case-insensitively (a schedule also without its "LR" suffix); an unknown one,
an argument the class does not take or a malformed configuration is an InvalidArgument that
says what is valid.

R1.8's runner hands configure_optimizer its whole `optimizer:` configuration, so the optimizer
also takes that configuration's keys (`runner_arguments`): some are its own under another name
(`learning_rate` → `lr` when it is a number; a schedule is the scheduler's, which writes `lr`;
`weight_decay_rate` → `weight_decay`; a pair from its two keys (PAIRS: `beta1`/`beta2` → `betas`,
Adafactor's `eps1`/`eps2`, Rprop's `eta1`/`eta2` and `step_size_min`/`step_size_max`); Adam's
and AdamW's own `correct_bias`; SPELLED: `epsilon` → `eps`, `use_bias_correction` →
`correct_bias`, as ModelZoo 1.8's configs spell them, for a class that takes them), the others (ELSEWHERE) belong to the grad scaler, the clipping or the runner's
summaries, which the runner builds from the same configuration: accepted, not the optimizer's.
A key only ModelZoo's TensorFlow runner reads (TENSORFLOW_ONLY) is dropped with a warning.
Only a key with no meaning anywhere is refused.
An optimizer whose lr has no default (Adafactor) is given lr=None when none is: its schedule
sets it.
"""

from __future__ import annotations

import inspect
import warnings

from csadmin.errors import InvalidArgument

from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from .lr_scheduler import (ChainedLR, ConstantLR, CosineAnnealingLR, CosineAnnealingWarmRestarts, CosineDecayLR,
                           CyclicLR, ExponentialLR, InverseExponentialTimeDecayLR, InverseSquareRootDecayLR, LambdaLR,
                           LinearLR, LRScheduler, MultiplicativeLR, MultiStepLR, OneCycleLR, PiecewiseConstantLR,
                           PolynomialLR, ScalePerParamLR, SequentialLR, StepLR)
from .optimizer import Optimizer
from .scaled import Adafactor, Lamb
from .sgd import ASGD, SGD
from .sign import Lion, Rprop

# Every optimizer class of the real package, found by its name as the real configure_optimizer
# finds them (case-insensitively).
OPTIMIZERS: dict[str, type[Optimizer]] = {
    cls.__name__: cls for cls in (SGD, ASGD, Adam, AdamW, Adamax, NAdam, RAdam, Adagrad, Adadelta, RMSprop, Lion,
                                  Rprop, Lamb, Adafactor)
}

# A pair parameter and the two keys a runner's configuration spells it as (R1.8's names; the real
# 2.x configure_optimizer lists the same ones as the old spellings of these parameters).
PAIRS = {"betas": ("beta1", "beta2"), "eps": ("eps1", "eps2"), "etas": ("eta1", "eta2"),
         "step_sizes": ("step_size_min", "step_size_max")}


# A runner configuration's other spellings of an optimizer's own parameter (where it takes one).
SPELLED = {"epsilon": "eps", "use_bias_correction": "correct_bias"}

# Keys of a runner's optimizer configuration that configure other objects (see the module docstring).
ELSEWHERE = {
    "max_gradient_norm": "gradient clipping (cstorch.amp.optimizer_step, GradScaler)",
    "max_gradient_value": "gradient clipping (cstorch.amp.optimizer_step)",
    "loss_scaling_factor": "GradScaler(loss_scale=...)",
    "initial_loss_scale": "GradScaler(init_scale=...)",
    "steps_per_increase": "GradScaler(steps_per_increase=...)",
    "min_loss_scale": "GradScaler(min_loss_scale=...)",
    "max_loss_scale": "GradScaler(max_loss_scale=...)",
    "log_summaries": "the runner's parameter and gradient norm summaries",
    # R1.8's older runner hands it to its own schedules (PyTorchBaseModel); the cstorch flow
    # passes configure_lr_scheduler the learning_rate alone, so there it changes nothing
    "disable_lr_steps_reset": "R1.8's PyTorchBaseModel learning-rate schedules",
}


# Keys ModelZoo 1.8's PyTorch configs carry over from its TensorFlow ones, which no PyTorch runner
# reads (params_gpt3_20b.yaml's ws_summary): dropped, with a warning that they change nothing.
TENSORFLOW_ONLY = {"ws_summary": "the TensorFlow Trainer's weight summaries"}


def configure_optimizer(optimizer_type: str, params, **kwargs) -> Optimizer:
    """`optimizer_type`'s class built over `params` with `kwargs` (a runner's keys mapped)."""
    cls = lookup("optimizer", optimizer_type, OPTIMIZERS)
    kwargs = arguments(cls, runner_arguments(cls, kwargs), runner_keys=True)
    if "lr" not in kwargs and inspect.signature(cls).parameters["lr"].default is inspect.Parameter.empty:
        kwargs["lr"] = None  # Adafactor's lr has no default: a schedule (configure_lr_scheduler) sets it
    return cls(params, **kwargs)


def _rename(kwargs: dict, old: str, new: str, owner: str) -> None:
    if old in kwargs:
        if new in kwargs:
            raise InvalidArgument(f"{owner}: {old} and {new} are one parameter, given twice.", f"Pass {new} only.")
        kwargs[new] = kwargs.pop(old)


def runner_arguments(cls, kwargs: dict) -> dict:
    """`kwargs` with a runner configuration's keys made `cls`'s own, and those of other objects
    (ELSEWHERE) left out."""
    owner, kwargs = cls.__name__, {k: v for k, v in kwargs.items() if k not in ELSEWHERE}
    for key in TENSORFLOW_ONLY.keys() & kwargs.keys():
        kwargs.pop(key)
        warnings.warn(f"optimizer: {key} ({TENSORFLOW_ONLY[key]}) changes nothing: no PyTorch runner reads it.",
                      stacklevel=3)
    takes = inspect.signature(cls).parameters
    if "learning_rate" in kwargs:
        if "lr" in kwargs:
            raise InvalidArgument(f"{owner}: learning_rate and lr are one parameter, given twice.", "Pass lr only.")
        rate = kwargs.pop("learning_rate")
        if isinstance(rate, (int, float)) and not isinstance(rate, bool):
            kwargs["lr"] = rate  # a schedule (dict, list) is configure_lr_scheduler's: it writes lr
    _rename(kwargs, "weight_decay_rate", "weight_decay", owner)
    for old, new in SPELLED.items():  # ModelZoo's configs (params_gpt2_small_ws.yaml) spell these so
        if new in takes and not _is_pair(takes[new].default):
            _rename(kwargs, old, new, owner)
    for name, (one, two) in PAIRS.items():
        default = takes[name].default if name in takes else None
        if _is_pair(default) and ({one, two} & set(kwargs)):
            if name in kwargs:
                raise InvalidArgument(f"{owner}: {one}/{two} and {name} are one parameter, given twice.",
                                      f"Pass {name} only.")
            kwargs[name] = (kwargs.pop(one, default[0]), kwargs.pop(two, default[1]))
    return kwargs


def _is_pair(default) -> bool:
    """Whether a parameter's default is a pair (Adam's eps is one number, Adafactor's two)."""
    return isinstance(default, tuple) and len(default) == 2


def lookup(what: str, name, table: dict):
    """`table[name]`, the name matched case-insensitively, else an error listing the valid names."""
    by_lower = {key.lower(): value for key, value in table.items()}
    if isinstance(name, str) and name.lower() in by_lower:
        return by_lower[name.lower()]
    raise InvalidArgument(f"Unknown {what} {name!r}. Valid {what}s: {', '.join(sorted(table))}.")


def arguments(cls, kwargs: dict, skip: int = 1, runner_keys: bool = False) -> dict:
    """`kwargs` if `cls(...)` takes every one of them (its first `skip` parameters are supplied by
    the caller), else an error naming the ones it does not take and the ones it does (and, for an
    optimizer, the runner's keys it also accepts)."""
    taken = inspect.signature(cls).parameters
    names = list(taken)[skip:]
    unknown = sorted(set(kwargs) - set(names))
    if unknown:
        pairs = ", ".join(f"{one}, {two}" for name, (one, two) in PAIRS.items()
                          if name in names and _is_pair(taken[name].default))
        also = (f" (and a runner's learning_rate, weight_decay_rate, {pairs + ', ' if pairs else ''}"
                f"{', '.join(ELSEWHERE)})" if runner_keys else "")
        raise InvalidArgument(f"{cls.__name__} does not take {', '.join(map(repr, unknown))}; it takes "
                              f"{', '.join(names)}{also}.")
    return kwargs


SCHEDULERS: dict[str, type[LRScheduler]] = {
    cls.__name__: cls for cls in (ConstantLR, PolynomialLR, LinearLR, ExponentialLR, StepLR, MultiStepLR,
                                  CosineDecayLR, SequentialLR, ChainedLR, InverseExponentialTimeDecayLR,
                                  InverseSquareRootDecayLR, PiecewiseConstantLR, CosineAnnealingLR, LambdaLR,
                                  CosineAnnealingWarmRestarts, MultiplicativeLR, CyclicLR, OneCycleLR, ScalePerParamLR)
}
# The configuration may also name a schedule without its "LR" suffix ("Linear", "CosineDecay").
_SCHEDULER_NAMES = {**SCHEDULERS, **{name.removesuffix("LR"): cls for name, cls in SCHEDULERS.items()}}
_FORMS = ("learning_rate is a number (a constant rate), a dict with the key 'scheduler' naming one "
          "(its other keys are the scheduler's arguments), or a list of such dicts (a SequentialLR, "
          "each with total_iters; or a ChainedLR if one has main_scheduler: ChainedLR)")


def configure_lr_scheduler(optimizer, learning_rate) -> LRScheduler | None:
    """The scheduler `learning_rate` describes, in one of the document's three forms; None for
    None (no schedule: R1.8's runner passes its configuration's learning_rate, which may be absent)."""
    if learning_rate is None:
        return None
    if isinstance(learning_rate, (int, float)) and not isinstance(learning_rate, bool):
        return ConstantLR(optimizer, learning_rate=learning_rate)
    if isinstance(learning_rate, dict):
        return _one(optimizer, _r18_spelling(learning_rate), "learning_rate")
    if isinstance(learning_rate, (list, tuple)) and learning_rate:
        return _several(optimizer, [_r18_spelling(c) for c in learning_rate])
    raise InvalidArgument(f"Cannot configure a learning rate from {learning_rate!r}: {_FORMS}.")


def _r18_spelling(config):
    """A schedule's configuration with R1.8's ModelZoo keys made ours: `steps` or `decay_steps` is
    `total_iters` (R1.8's runner reads either as the schedule's length); `alpha` (TensorFlow's
    cosine floor, which configs carry over and R1.8's PyTorch schedules never read) is dropped,
    with a warning that it changes nothing."""
    if not isinstance(config, dict):
        return config
    config = dict(config)
    for old in ("steps", "decay_steps"):
        if old in config and "total_iters" not in config:
            config["total_iters"] = config.pop(old)
    if "alpha" in config:
        warnings.warn(f"learning_rate: alpha={config.pop('alpha')!r} of the {config.get('scheduler')} schedule "
                      "changes nothing: R1.8's PyTorch schedules do not read it (TensorFlow's cosine floor).",
                      stacklevel=3)
    return config


def _one(optimizer, config, where: str) -> LRScheduler:
    if not isinstance(config, dict):
        raise InvalidArgument(f"{where} is a {type(config).__name__}, not a dict: {_FORMS}.")
    kwargs = {key: value for key, value in config.items() if key not in ("scheduler", "main_scheduler")}
    if "scheduler" not in config:
        raise InvalidArgument(f"{where} has no key 'scheduler' naming the schedule. Valid schedulers: "
                              f"{', '.join(sorted(SCHEDULERS))}.")
    cls = lookup("scheduler", config["scheduler"], _SCHEDULER_NAMES)
    if cls in (SequentialLR, ChainedLR):
        raise InvalidArgument(f"{where} names {cls.__name__}: give its parts as a list of dicts instead: {_FORMS}.")
    if cls is ScalePerParamLR:  # it wraps a scheduler object, which a configuration cannot hold
        raise InvalidArgument(f"{where} names ScalePerParamLR, which wraps a built scheduler: configure the "
                              "schedule, then wrap it: ScalePerParamLR(optimizer, scheduler).")
    try:
        return cls(optimizer, **arguments(cls, kwargs))
    except InvalidArgument as e:
        raise InvalidArgument(f"{where}: {e.message}", e.hint) from None
    except TypeError as e:  # a required argument left out
        raise InvalidArgument(f"{where}: {cls.__name__} needs {_missing(cls, kwargs)} ({e}).") from None


def _several(optimizer, configs: list) -> LRScheduler:
    mains = {c.get("main_scheduler") for c in configs if isinstance(c, dict) and "main_scheduler" in c}
    if not mains <= {"ChainedLR", "SequentialLR"}:
        raise InvalidArgument(f"main_scheduler {sorted(map(str, mains))} is not ChainedLR or SequentialLR.")
    parts = [_one(optimizer, config, f"learning_rate[{i}]") for i, config in enumerate(configs)]
    if "ChainedLR" in mains:
        return ChainedLR(optimizer, parts)
    milestones, total = [], 0
    for i, config in enumerate(configs[:-1]):
        if config.get("total_iters") is None:
            raise InvalidArgument(f"learning_rate[{i}] has no total_iters: each scheduler of a SequentialLR says "
                                  "how many steps it runs.")
        total += config["total_iters"]
        milestones.append(total)
    return SequentialLR(optimizer, parts, milestones)


def _missing(cls, kwargs: dict) -> str:
    required = [name for name, p in list(inspect.signature(cls).parameters.items())[1:]
                if p.default is inspect.Parameter.empty and name not in kwargs]
    return ", ".join(required) or "other arguments"
