"""system.show — the system's lifecycle state, health and execution modes.

args: detailed (bool, optional): add the daemon's version, start time and simulated durations.
result: {systemType, serial, state, systemHealth, activeExecmode, configuredExecmode,
         pendingUntil (ms or null), seq (last event's, for resync), time (ms)}
"""

from csadmin.shared import ops

SPEC = ops.SYSTEM_SHOW


def execute(ctx, args, caller):
    result = ctx.device.show()
    if args.detailed:
        timings = ctx.device.timings
        result["daemon"] = {
            "version": ctx.version,
            "startedAt": ctx.started_at,
            "activateMs": timings.activate_ms,
            "standbyMs": timings.standby_ms,
            "eventsEndpoint": ctx.events_endpoint,
        }
    return result
