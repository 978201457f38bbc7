"""system.fault.scenario — load a fault scenario (admins only): a TOML text of faults to inject on
a schedule, relative to the load or to the opening of the Nth run after it (docs/operations.md,
"Fault scenarios"; statemachine/faults/scenario.py). `cs system fault scenario FILE` reads the
file and sends its text.

Loading replaces the scenario loaded before (its steps still to come are cancelled; faults already
active stay). A scenario with mistakes: INVALID_ARGUMENT listing every problem with its line.
args: text (str, required, at most 60000 characters); source (str): a name for messages (the
      file's name); dry_run (bool): check only (the steps it would schedule).
result: {message, changed, steps: [in words], systemHealth, activeFaults} (and dryRun: true)
"""

from csadmin.shared import ops

SPEC = ops.SYSTEM_FAULT_SCENARIO


def execute(ctx, args, caller):
    return ctx.device.load_scenario(args, origin=caller.origin())
