"""Every csd operation, declared once as plain data that both ends import.

An `Op` says everything about an operation that is not its behaviour: its name on the wire, its
arguments and their validation (csadmin/shared/opargs.py), the least role allowed, whether it changes
anything, whether that change is kept durably (hot ops are not: daemon/serve/dispatch.py), whether a
read is answered from the read cache (daemon/serve/reads.py), whether it takes `dry_run`, and the keys
every successful reply carries. csd's module for op `a.b.c` is daemon/commands/a_b_c.py: its
docstring documents the op and its `execute` carries it out (`SPEC = ops.A_B_C` names which).
The client calls `call(ops.SYSTEM_STANDBY, …)`, the console's table rows name the op they ask
for, so a misspelt op fails at import, not on the wire. `ALL` lists them; a new op is one entry
here plus its module in daemon/commands/ (tests/test_ops.py checks the two agree, and that the
docs name exactly these ops).

A leaf: pure and stdlib only (opargs, programs, states), cheap enough for every one-shot `cs`.
"""

from __future__ import annotations

from .opargs import (DRY_RUN, MAX_SLOTS, Arg, Args, at_most, fault_name, glob, job_id, join_token, label, lease_seconds,
                     non_negative, path, reason, run_id, seconds_after, seconds_for, validate)
from .programs import parse_mode, parse_program
from .scenario_limits import MAX_BYTES
from .states import ExecMode

ADMIN, OPERATOR, VIEWER = "admin", "operator", "viewer"  # admin > operator > viewer


class Op:
    """One op: its name on the wire ("system.standby"), the least role allowed, its arguments,
    whether it changes anything (audited, deduplicated on the request id, kept before it is
    answered), the keys every successful reply carries, whether its change is durable (False: a
    hot op kept in memory, daemon/serve/dispatch.py) and whether a read is answered from the read cache
    while the model is unchanged. (A plain class with slots: cheaper to define than a NamedTuple
    on every one-shot `cs`.)"""

    __slots__ = ("name", "role", "args", "mutating", "reply", "durable", "cached")

    def __init__(self, name: str, role: str, args: dict[str, Arg], mutating: bool, reply: tuple[str, ...] = (),
                 durable: bool = True, cached: bool = False):
        self.name, self.role, self.args, self.mutating = name, role, args, mutating
        self.reply, self.durable, self.cached = reply, durable, cached

    def __repr__(self) -> str:
        return f"Op({self.name})"

    @property
    def dry_run(self) -> bool:
        """Whether it takes `dry_run`: check the request, say whether it would change anything."""
        return "dry_run" in self.args

    def request(self, /, **values) -> Args:
        """These arguments as csd hands them down — what a command and the model read —
        validated as csd validates a request (opargs.ArgError if they are not); None leaves an
        argument out, as the client does. For tests of the model and for csd's own requests."""
        return Args(self.args, validate(self.args, {k: v for k, v in values.items() if v is not None}))

    @property
    def module(self) -> str:
        """Its module in daemon/commands/: system.standby → system_standby."""
        return self.name.replace(".", "_")


# The keys of a run as runs.show reports it (other ops answer with a run, plus their own keys).
RUN = ("runId", "number", "owner", "client", "mode", "status", "fabric", "leaseSeconds", "leaseUntil", "openedAt",
       "program", "totalSamples", "endedAt", "abortReason", "performance")
TRANSITION = ("message", "changed", "state", "pendingUntil")  # what a change of the system answers
FAULTS = (*TRANSITION, "systemHealth", "activeFaults")
MAX_SAMPLES = 10**12  # per run.stream report: far beyond any batch, far below what breaks the arithmetic
WORKERS = Arg(int, parse=at_most(MAX_SLOTS), help="input worker slots; the reply carries their joinToken", default=0)
RUN_ID = Arg(str, required=True, parse=run_id, help="the run's id, e.g. run-000042")
JOB_ID = Arg(str, required=True, parse=job_id, help="Slurm's job id")
MAX_COUNT = Arg(int, parse=non_negative, help="only the newest N")

META_HELLO = Op("meta.hello", VIEWER, {}, False, ("protocol", "version", "serial", "systemType", "eventsEndpoint",
                                                   "tcpEventsEndpoint", "eventTypes"))
META_WHOAMI = Op("meta.whoami", VIEWER, {}, False, ("name", "role", "session"))
SYSTEM_SHOW = Op("system.show", VIEWER, {"detailed": Arg(bool, help="add daemon and timing details")}, False,
                 ("systemType", "serial", "state", "systemHealth", "activeExecmode", "configuredExecmode",
                  "pendingUntil", "seq", "time"), cached=True)
SYSTEM_DATE = Op("system.date", VIEWER, {}, False, ("time", "iso"))
SYSTEM_STANDBY = Op("system.standby", ADMIN, {"force": Arg(bool, help="abort the run holding the fabric"),
                                              "dry_run": DRY_RUN}, True, TRANSITION)
SYSTEM_ACTIVATE = Op("system.activate", ADMIN, {"dry_run": DRY_RUN}, True, TRANSITION)
SYSTEM_FAULT_INJECT = Op("system.fault.inject", ADMIN, {
    "name": Arg(str, required=True, parse=fault_name, help="a fault of the catalogue, e.g. temperature-high-warn"),
    "for_seconds": Arg(float, parse=seconds_for, help="it clears this long after it is injected"),
    "after_seconds": Arg(float, parse=seconds_after, help="inject it this long from now"),
    "dry_run": DRY_RUN,
}, True, FAULTS)
SYSTEM_FAULT_CLEAR = Op("system.fault.clear", ADMIN, {
    "name": Arg(str, parse=fault_name, help="the fault to clear"),
    "all": Arg(bool, help="clear every fault and the scenario's steps still to come"),
    "dry_run": DRY_RUN,
}, True, FAULTS)
SYSTEM_FAULT_LIST = Op("system.fault.list", VIEWER, {}, False, ("faults", "catalogue", "systemHealth", "scenario"))
SYSTEM_FAULT_SCENARIO = Op("system.fault.scenario", ADMIN, {
    # The file's own bound (csadmin/shared/scenario_limits.py), inside one 64 KiB frame.
    "text": Arg(str, required=True, max_chars=MAX_BYTES, help="the scenario, as TOML"),
    "source": Arg(str, parse=label, help="a name for messages, e.g. the file's", default="scenario"),
    "dry_run": DRY_RUN,
}, True, ("message", "changed", "steps", "systemHealth", "activeFaults"))
CONFIG_EXECMODE_SHOW = Op("config.execmode.show", VIEWER, {}, False,
                          ("execmode", "activeExecmode", "takesEffectOnActivate"))
CONFIG_EXECMODE_SETUP = Op("config.execmode.setup", ADMIN, {
    "mode": Arg(str, required=True, parse=ExecMode.parse, help="PIPELINED or WEIGHT_STREAMING"), "dry_run": DRY_RUN,
}, True, (*TRANSITION, "execmode", "activeExecmode", "takesEffectOnActivate"))
EVENTS_SHOW = Op("events.show", VIEWER, {
    "event_type": Arg(str, parse=glob, help="glob on the event type"),
    "from_time": Arg(int, parse=non_negative, help="ms since the epoch"),
    "max_count": Arg(int, parse=non_negative),
    "after_seq": Arg(int, parse=non_negative),
}, False, ("events", "seq"))
RUN_OPEN = Op("run.open", OPERATOR, {
    "mode": Arg(str, required=True, parse=parse_mode, help="train or eval"),
    "owner": Arg(str, parse=label, help="the runtime's label, e.g. a job name"),
    "lease_seconds": Arg(float, parse=lease_seconds, help="seconds without a call before the run is aborted"),
    "workers": WORKERS,
    "model_dir": Arg(str, parse=path, help="the runtime's artifact directory (shown, never opened)"),
    "time_limit_seconds": Arg(float, parse=seconds_for,
                              help="seconds the run may last before csd aborts it (cstorch's job_time_sec)"),
}, True, (*RUN, "message"))
RUN_PROGRAM = Op("run.program", OPERATOR, {
    "run_id": RUN_ID,
    "program": Arg(dict, required=True, parse=parse_program, help="the compiled artifact's descriptor"),
    "workers": WORKERS,
}, True, (*RUN, "message"))
RUN_STREAM = Op("run.stream", OPERATOR, {
    "run_id": RUN_ID,
    "samples": Arg(int, required=True, parse=at_most(MAX_SAMPLES), help="samples fed since the last report"),
}, True, ("runId", "status", "fabric", "totalSamples", "leaseUntil"), durable=False)
RUN_HEARTBEAT = Op("run.heartbeat", OPERATOR, {"run_id": RUN_ID}, True, ("runId", "status", "fabric", "leaseUntil"),
                   durable=False)
RUN_CLOSE = Op("run.close", OPERATOR, {
    "run_id": RUN_ID,
    "reason": Arg(str, parse=reason, help="end the run as ABORTED with this reason"),
}, True, (*RUN, "changed", "message"))
RUN_JOIN = Op("run.join", OPERATOR, {
    "run_id": RUN_ID,
    "token": Arg(str, required=True, parse=join_token, help="the run's joinToken, from its opener"),
    "name": Arg(str, parse=label, help="the worker's name in the run's breakdown"),
}, True, (*RUN, "worker", "changed", "message"))
RUN_LEAVE = Op("run.leave", OPERATOR, {"run_id": RUN_ID}, True, (*RUN, "worker", "changed", "message"))
RUNS_LIST = Op("runs.list", VIEWER, {"max_count": Arg(int, parse=non_negative, help="only the newest N runs")}, False,
               ("runs", "runHolder"))
RUNS_SHOW = Op("runs.show", VIEWER, {"run_id": RUN_ID}, False, RUN)
RUNS_ABORT = Op("runs.abort", ADMIN, {
    "run_id": RUN_ID, "reason": Arg(str, parse=reason, help="why, shown to the runtime"), "dry_run": DRY_RUN,
}, True, (*RUN, "changed", "message"))
AUDIT_SHOW = Op("audit.show", ADMIN, {
    "max_count": Arg(int, parse=non_negative, help="only the newest N records (default 100)", default=100),
}, False, ("entries",))
SLURM_JOB_BEGIN = Op("slurm.job.begin", ADMIN, {"job_id": JOB_ID,
                                                "user": Arg(str, required=True, parse=label, help="the job's user")},
                     True, ("message", "changed", "slurmJob", "abortedRun"))
SLURM_JOB_END = Op("slurm.job.end", ADMIN, {"job_id": JOB_ID}, True, ("message", "changed", "abortedRun"))

# Every op above, in the order declared (so declaring one is all it takes to list it).
ALL: tuple[Op, ...] = tuple(value for value in tuple(globals().values()) if isinstance(value, Op))
