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

from csadmin.scenario_limits import MAX_BYTES

from ..args import DRY_RUN, Arg, label

NAME = "system.fault.scenario"
MUTATING = True
ROLE = "admin"  # the least role allowed (admin > operator > viewer)
MAX_TEXT_CHARS = MAX_BYTES  # the file's own bound (csadmin/scenario_limits.py), inside one 64 KiB frame
ARGS = {
    "text": Arg(str, required=True, max_chars=MAX_TEXT_CHARS, help="the scenario, as TOML"),
    "source": Arg(str, parse=label, help="a name for messages, e.g. the file's"),
    "dry_run": DRY_RUN,
}


def execute(ctx, args, caller):
    return ctx.device.load_scenario(args["text"], args.get("source") or "scenario", origin=caller.origin(),
                                    dry_run=bool(args.get("dry_run")))
