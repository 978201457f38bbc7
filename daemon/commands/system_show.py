"""system.show — the system's lifecycle state, health and execution modes.

args: detailed (bool, optional): add the daemon's version, start time and simulated durations.
result: {systemType, serial, state, systemHealth, activeExecmode, configuredExecmode,
         pendingUntil (ms or null), seq (last event's, for resync), time (ms)}
"""

from ..args import Arg

NAME = "system.show"
MUTATING = False
CACHED = True  # the answer depends only on the model: encoded once per change (daemon/reads.py)
ROLE = "viewer"  # the least role allowed (admin > operator > viewer)
ARGS = {"detailed": Arg(bool, help="add daemon and timing details")}


def execute(ctx, args, caller):
    result = ctx.device.show()
    if args.get("detailed"):
        timings = ctx.device.timings
        result["daemon"] = {
            "version": ctx.version,
            "startedAt": ctx.started_at,
            "activateMs": timings.activate_ms,
            "standbyMs": timings.standby_ms,
            "eventsEndpoint": ctx.events_endpoint,
        }
    return result
