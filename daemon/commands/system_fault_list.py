"""system.fault.list — the faults present, the catalogue of faults that can be injected, and the
loaded scenario (viewers may read it: `system.show` carries the faults present anyway).

args: none.
result: {faults: [{name, status (scheduled|armed|firing|active), since, until, due, forMs,
         injected, by, event, severity, health, effect, summary, scenario?, line?}],
         catalogue: [{name, event, severity, health, effect, summary, transition, outcome}],
         systemHealth, scenario: {source, description, loadedAt, digest, runsOpened, steps,
         waiting} | null}
"""

from csadmin.shared import ops
from csadmin.statemachine.faults import FAULTS

SPEC = ops.SYSTEM_FAULT_LIST


CATALOGUE = [
    {"name": f.name, "event": f.event, "severity": f.severity.value, "health": f.health.value, "effect": f.effect.value,
     "summary": f.summary, "transition": f.transition.value if f.transition else None,
     "outcome": f.outcome.value if f.outcome else None}
    for f in FAULTS
]


def execute(ctx, args, caller):
    device = ctx.device
    return {"faults": device.faults.listing(), "catalogue": CATALOGUE, "systemHealth": device.health.value,
            "scenario": device.faults.scenario()}
