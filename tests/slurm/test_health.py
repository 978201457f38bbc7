"""The health check's judgement and what it does to the node (csadmin/slurm/health.py), reading
scontrol's output (scontrol.py) and a job's constraint (features.py): pure functions, every case."""

from __future__ import annotations

import pytest

from csadmin import errors
from csadmin.slurm import features, health
from csadmin.slurm.scontrol import Node, SlurmError, gres_names, parse_node

SNAP = {"serial": "CS2-0001", "state": "ACTIVE", "systemHealth": "OK", "activeExecmode": "PIPELINED"}


def node(state="IDLE", flags=(), reason=None, active=("cs2_pipelined",)) -> Node:
    return Node("cs2node", state, frozenset(flags), reason, frozenset(active))


# -- judging the CS-2 -----------------------------------------------------------------------------


@pytest.mark.parametrize("changes, ok, what", [
    ({}, True, "CS2-0001 ACTIVE in PIPELINED, systemHealth OK"),
    ({"systemHealth": "DEGRADED"}, True, "CS2-0001 ACTIVE in PIPELINED, systemHealth DEGRADED"),
    ({"state": "STANDBY", "systemHealth": "STANDBY"}, False, "CS2-0001 STANDBY"),
    ({"state": "PENDING_ACTIVE", "systemHealth": "PENDING_ACTIVE"}, False, "CS2-0001 PENDING_ACTIVE"),
    ({"state": "PENDING_STANDBY", "systemHealth": "PENDING_STANDBY"}, False, "CS2-0001 PENDING_STANDBY"),
    ({"systemHealth": "CRITICAL"}, False, "systemHealth CRITICAL"),
    ({"activeExecmode": "WEIGHT_STREAMING"}, False,
     "CS2-0001 runs WEIGHT_STREAMING but Slurm has cs2_pipelined: restart slurmd"),
])
def test_a_node_takes_jobs_only_while_its_cs2_is_active_healthy_and_in_slurms_mode(changes, ok, what):
    assert health.judge({**SNAP, **changes}, node()) == health.Verdict(ok, what)


def test_csd_out_of_reach_is_said_so():
    assert health.judge(None, node()) == health.Verdict(False, "csd unreachable")
    assert health.judge(None, node(), "cannot ask csd (PERMISSION_DENIED)").what == "cannot ask csd (PERMISSION_DENIED)"


def test_a_node_slurm_gave_no_mode_is_out_of_step_too():
    assert health.judge(SNAP, node(active=())).what == "CS2-0001 runs PIPELINED but Slurm has no feature: restart slurmd"


# -- what it does to the node -----------------------------------------------------------------------

BAD = health.Verdict(False, "CS2-0001 STANDBY")
GOOD = health.Verdict(True, "CS2-0001 ACTIVE in PIPELINED, systemHealth OK")
OURS = "CS2-0001 STANDBY (cs health check)"


@pytest.mark.parametrize("the_node, verdict, kind, reason", [
    (node(), GOOD, "keep", None),
    (node(), BAD, "drain", OURS),
    (node("MIXED"), BAD, "drain", OURS),  # draining: the running job finishes, no new one starts
    (node(flags=["DRAIN"], reason=OURS), GOOD, "resume", None),
    (node(flags=["DRAIN"], reason=OURS), BAD, "keep", None),
    (node(flags=["DRAIN"], reason="csd unreachable (cs health check)"), BAD, "drain", OURS),  # says what now
    (node(flags=["DRAIN"], reason="maintenance: pump swap"), GOOD, "leave", None),
    (node(flags=["DRAIN"], reason="maintenance: pump swap"), BAD, "leave", None),
    (node(flags=["DRAIN"], reason="Prolog error"), GOOD, "leave", None),
    (node(flags=["DRAIN"], reason="cs prolog: job 7: CS2-0001 is STANDBY"), GOOD, "leave", None),
    (node("DOWN", reason="Not responding"), BAD, "leave", None),
    (node("DOWN", flags=["DRAIN"], reason=OURS), GOOD, "leave", None),  # Slurm downed it since: Slurm's call
])
def test_the_health_check_drains_and_resumes_only_what_it_drained_itself(the_node, verdict, kind, reason):
    action = health.decide(the_node, verdict)
    assert (action.kind, action.reason) == (kind, reason)
    assert action.why


# -- scontrol's records -----------------------------------------------------------------------------

NODE_LINE = (
    "NodeName=cs2node Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.09 "
    "AvailableFeatures=cs2_pipelined,cs2_weight_streaming ActiveFeatures=cs2_weight_streaming Gres=cs:1 "
    "NodeAddr=127.0.0.1 NodeHostName=localhost Version=22.05.8 OS=Linux 6.1 #1 SMP PREEMPT_DYNAMIC @0  "
    "RealMemory=1 State=IDLE+DRAIN ThreadsPerCore=1 Partitions=cs  BootTime=2026-11-23T11:35:22 "
    "CfgTRES=cpu=2,mem=1M,billing=2 AllocTRES= Reason=maintenance: pump swap [root@2026-11-23T11:37:15]\n"
)


def test_a_node_line_gives_state_flags_reason_and_active_features():
    n = parse_node(NODE_LINE)
    assert n == Node("cs2node", "IDLE", frozenset({"DRAIN"}), "maintenance: pump swap",
                     frozenset({"cs2_weight_streaming"}))
    assert n.drained and not n.down and not n.rebooting


def test_a_node_slurm_is_rebooting_for_a_mode_switch_is_recognised():
    line = NODE_LINE.replace("State=IDLE+DRAIN", "State=MIXED+NOT_RESPONDING+POWERING_UP").split(" Reason=")[0]
    n = parse_node(line)
    assert n.rebooting and n.reason is None and not n.drained
    assert parse_node(line.replace("MIXED+NOT_RESPONDING+POWERING_UP", "DOWN+REBOOT_ISSUED")).rebooting


def test_a_node_with_no_active_feature_has_none():
    assert parse_node(NODE_LINE.replace("ActiveFeatures=cs2_weight_streaming", "ActiveFeatures=(null)")).active_features \
        == frozenset()


def test_an_unreadable_node_record_is_an_error_not_a_guess():
    with pytest.raises(SlurmError) as failed:
        parse_node("slurm_load_node error: Invalid node name specified")
    assert failed.value.exit_code == errors.EXIT_UNREACHABLE


@pytest.mark.parametrize("line, names", [
    ("JobId=7 TresPerNode=gres:cs:1 Features=cs2_pipelined", {"cs"}),
    ("JobId=7 TresPerNode=gres:cs", {"cs"}),
    ("JobId=7 TresPerNode=gres/cs:1,gres:gpu:2", {"cs", "gpu"}),
    ("JobId=7 TresPerJob=gres:cs:1", {"cs"}),
    ("JobId=7 TresPerNode=gres:css:1 Command=/bin/gres:cs", {"css"}),
    ("JobId=7 NumCPUs=1", set()),
])
def test_the_wafer_is_found_among_a_jobs_gres(line, names):
    assert gres_names(line) == names


# -- features -------------------------------------------------------------------------------------


@pytest.mark.parametrize("constraint, modes", [
    ("", set()),
    (None, set()),
    ("cs2_weight_streaming", {"WEIGHT_STREAMING"}),
    ("bigmem&cs2_pipelined", {"PIPELINED"}),
    ("cs2_pipelined_old", set()),
    ("cs2_pipelined|cs2_weight_streaming", {"PIPELINED", "WEIGHT_STREAMING"}),
])
def test_a_constraint_names_the_modes_a_job_accepts(constraint, modes):
    assert features.modes_in_constraint(constraint) == modes


def test_features_and_modes_map_both_ways_and_anything_else_is_a_usage_error():
    for mode in ("PIPELINED", "WEIGHT_STREAMING"):
        assert features.mode_of(features.feature_of(mode)) == mode
    with pytest.raises(errors.UsageError) as refused:
        features.mode_of("cs2_turbo")
    assert "cs2_pipelined" in refused.value.hint
