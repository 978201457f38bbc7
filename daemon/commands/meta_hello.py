"""meta.hello — who is this daemon.

args: none.
result: {protocol, version, serial, systemType, eventsEndpoint, tcpEventsEndpoint,
         eventTypes (the catalog, for completion)}
(tcpEventsEndpoint is "" unless csd also publishes on TCP for remote runtimes.)
"""

from csadmin.shared import ops
from csadmin.shared import protocol
from csadmin.statemachine.events import CATALOG

SPEC = ops.META_HELLO


def execute(ctx, args, caller):
    return {
        "protocol": protocol.VERSION,
        "version": ctx.version,
        "serial": ctx.device.serial,
        "systemType": "cs2",
        "eventsEndpoint": ctx.events_endpoint,
        "tcpEventsEndpoint": ctx.tcp_events_endpoint,
        "eventTypes": sorted(CATALOG),
    }
