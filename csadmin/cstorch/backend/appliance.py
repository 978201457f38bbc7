"""What R1.8 scripts import from `cerebras_appliance`, the real system's client package, to pass to
`cstorch.configure`: the execution strategy and the debug arguments.

    from cerebras_appliance.pb.workflow.appliance.common.common_config_pb2 import ExecutionStrategy, DebugArgs
    from cerebras_appliance.run_utils import get_debug_args, update_debug_args_with_autogen_policy

    cstorch.configure(..., execution_strategy=ExecutionStrategy.ES_WEIGHT_STREAMING,
                      debug_args=get_debug_args(runconfig.get("debug_args_path")))

`python -m csadmin.cstorch` registers this module under those two names (ALIASES; nothing named
cerebras_* is installed), and a script importing csadmin.cstorch directly imports them from here.
There is no appliance in this model — csd runs the simulated CS-2 itself — so configure records
both in the run's yaml and says, once, that they change nothing; the one check they get is that the
strategy agrees with the compile backend's execution mode (core/compile.py).
"""

from __future__ import annotations

import enum
import os

from csadmin.errors import InvalidArgument, NotFound

# Where the real package keeps these names.
ALIASES = ("cerebras_appliance.run_utils", "cerebras_appliance.pb.workflow.appliance.common.common_config_pb2")


class ExecutionStrategy(enum.Enum):
    """The appliance's execution strategy; each value is the execution mode csd calls it."""

    ES_PIPELINE = "PIPELINED"
    ES_WEIGHT_STREAMING = "WEIGHT_STREAMING"


AUTOGEN_POLICIES = ("default", "disabled", "medium", "aggressive")


class DebugArgs:
    """The appliance's debug settings (a protobuf message on the real system). Here: the debug args
    file get_debug_args read (its text is kept as read, not interpreted) and the autogen policy
    update_debug_args_with_autogen_policy set; `settings()` is what the run's yaml records."""

    def __init__(self):
        self.path: str | None = None
        self.text = ""
        self.autogen_policy: str | None = None

    def settings(self) -> dict:
        return {k: v for k, v in (("file", self.path), ("autogen_policy", self.autogen_policy)) if v is not None}

    def __repr__(self) -> str:
        return f"DebugArgs({self.settings()})"


def get_debug_args(path: str | None) -> DebugArgs:
    """The debug arguments of the file at `path` (none: empty ones), as the real helper reads them."""
    debug_args = DebugArgs()
    if path:
        if not os.path.isfile(path):
            raise NotFound(f"get_debug_args: no debug args file {path!r}.",
                           "Pass the path of a debug args file, or None for the defaults.")
        with open(path, encoding="utf-8") as f:
            debug_args.text = f.read()
        debug_args.path = os.path.abspath(path)
    return debug_args


def update_debug_args_with_autogen_policy(debug_args: DebugArgs, autogen_policy: str | None = None) -> None:
    """Set the autogen policy (one of AUTOGEN_POLICIES); None leaves it as it is."""
    if not autogen_policy:
        return
    if autogen_policy not in AUTOGEN_POLICIES:
        raise InvalidArgument(f"{autogen_policy!r} is not an autogen policy.",
                              f"Valid policies: {', '.join(AUTOGEN_POLICIES)}.")
    debug_args.autogen_policy = autogen_policy

