"""Slurm's node features for the execution modes, and what a job's constraint asks for (pure).

The node advertises both features (slurm.conf `Features=`); node_features/helpers reports the
active one through `cs slurm features` and switches it with `cs slurm set-feature FEATURE`.
"""

from __future__ import annotations

import re

from .. import errors
from ..shared.states import ExecMode

# cs2_pipelined, cs2_weight_streaming: one feature per execution mode.
FEATURE_MODES = {f"cs2_{mode.value.lower()}": mode.value for mode in ExecMode}
MODE_FEATURES = {mode: feature for feature, mode in FEATURE_MODES.items()}


def feature_of(mode: str) -> str:
    return MODE_FEATURES[mode]


def mode_of(feature: str) -> str:
    try:
        return FEATURE_MODES[feature]
    except KeyError:
        raise errors.UsageError(
            f"{feature!r} is not a CS-2 feature.", f"Slurm's features for the modes are {', '.join(FEATURE_MODES)}."
        ) from None


def modes_in_constraint(constraint: str | None) -> set[str]:
    """The execution modes a job's constraint (`SLURM_JOB_CONSTRAINTS`) names; empty if none.
    node_features/helpers allows only `&` between changeable features, so a job names at most
    one mode; should a constraint name both, either satisfies it."""
    words = re.split(r"[^A-Za-z0-9_.=]+", constraint or "")
    return {FEATURE_MODES[w] for w in words if w in FEATURE_MODES}
