"""R1.8's `cerebras_pytorch.core.modes`: the names of a run's modes, as ModelZoo's runconfig and
command line spell them (`--mode train`)."""

from __future__ import annotations

TRAIN = "train"
EVAL = "eval"
TRAIN_AND_EVAL = "train_and_eval"
INFERENCE = "inference"
EVAL_ALL = "eval_all"


def get_modes() -> tuple:
    """Every mode name."""
    return (TRAIN, EVAL, TRAIN_AND_EVAL, INFERENCE, EVAL_ALL)


def is_valid(mode) -> bool:
    """True when `mode` is one of get_modes()."""
    return mode in get_modes()
