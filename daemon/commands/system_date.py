"""system.date — the system's clock.

args: none.
result: {time (ms since the epoch), iso (UTC, ISO 8601)}
"""

from csadmin.shared import ops
import time

SPEC = ops.SYSTEM_DATE


def execute(ctx, args, caller):
    now = ctx.device.show()["time"]
    return {"time": now, "iso": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now / 1000)) + f".{now % 1000:03d}Z"}
