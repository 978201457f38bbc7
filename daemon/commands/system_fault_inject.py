"""system.fault.inject — inject a simulated fault (admins only), to see how runtimes and tools
cope. Every event it causes carries `details.injected = true` and `details.fault`.

args: name (str, required): a fault of the catalogue (`system.fault.list`), any case, or the event
      it raises; for_seconds (number > 0): it clears that long after it is injected (a transition
      fault: stays armed that long); after_seconds (number ≥ 0): inject it that long from now;
      dry_run (bool): check only.
Effects by kind: a warning makes systemHealth DEGRADED (runs carry on); a critical sensor or
hardware fault aborts the run holding the fabric (its runtime gets RUN_ABORTED with `fault`) and
makes run.open, run.program and system.activate FAULT_ACTIVE until it clears; an emergency
shutdown also drops the system to STANDBY at once; a transition fault is armed: the next
system.activate / system.standby / config.execmode.setup fails or times out with the real
…Failed / …Timedout event. Injecting a fault already present renews its end (changed=false
when nothing moved). An unknown name: INVALID_ARGUMENT naming the catalogue.
result: {message, changed, state, pendingUntil, systemHealth, activeFaults} (and dryRun: true)
"""

from csadmin.shared import ops

SPEC = ops.SYSTEM_FAULT_INJECT


def execute(ctx, args, caller):
    return ctx.device.inject_fault(args, origin=caller.origin())
