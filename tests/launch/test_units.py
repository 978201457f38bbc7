"""The launchers' pure parts, alone: the layout rules, the srun line, the sizing arithmetic, the
command-line splitting, the system's node and the artifacts' lookup (single units: no csd)."""

import json
import os

import pytest

from csadmin import errors
from csadmin.launch import args, nodes, placement, sizing, wse


def test_layout_rules_before_allocation():
    with pytest.raises(errors.UsageError, match="--single-task-nodes 1 with python-ws: On Weight streaming execution "
                                                "at least two single task cpu nodes are required"):
        placement.plan("python-ws", 14, 1, 8, 16, True)
    with pytest.raises(errors.UsageError, match="--total-nodes 1 is fewer than --single-task-nodes 2"):
        placement.plan("python-ws", 1, 2, None, None, False)
    with pytest.raises(errors.UsageError, match="--cpus-per-task must be at least 1, not 0"):
        placement.plan("python-pt", None, None, None, 0, False)
    p = placement.plan("python-ws", 14, 2, 8, 16, True)  # 003's command line
    assert (p.worker_nodes, p.workers, p.feature) == (12, 96, "cs2_weight_streaming")
    p = placement.plan("python-pt", None, None, None, None, False)
    assert (p.total_nodes, p.single_task_nodes, p.workers, p.feature) == (1, 1, 0, "cs2_pipelined")


def test_srun_line_asks_for_the_wafer_the_mode_and_the_node():
    p = placement.plan("python-ws", 2, 2, None, 4, False)
    cmd = wse.srun_command(p, "cs2-node3", "job", ["train.py", "--x"])
    assert cmd[:7] == ["srun", "--job-name=job", "--nodes=1", "--ntasks=1", "--cpus-per-task=4", "--gres=cs:1",
                       "--constraint=cs2_weight_streaming"]
    assert cmd[7] == "--nodelist=cs2-node3" and cmd[-4:] == ["-m", "csadmin.cstorch", "train.py", "--x"]


def test_workers_on_other_nodes_are_a_second_component_of_the_same_step():
    p = placement.plan("python-ws", 4, 2, 2, 3, True)
    cmd = wse.srun_command(p, "cs1", "job", ["train.py"], "/shared/.csrun_wse-x")
    trainer, workers = cmd[:cmd.index(":")], cmd[cmd.index(":") + 1:]
    assert "--gres=cs:1" in trainer and "--nodelist=cs1" in trainer
    supervised = ["csadmin.launch.task", "trainer", "/shared/.csrun_wse-x", "--"]
    assert trainer[trainer.index("csadmin.launch.task"):][:4] == supervised
    assert "--gres=cs:1" not in workers
    assert workers[:5] == ["--nodes=2", "--ntasks-per-node=2", "--cpus-per-task=3", "--distribution=cyclic",
                           "--exclude=cs1"]
    supervised[1] = "worker"
    assert workers[workers.index("csadmin.launch.task"):][:4] == supervised
    assert workers[-3:] == ["-m", "csadmin.cstorch", "train.py"]


def test_a_worker_task_learns_its_index_from_slurm_and_the_trainer_its_address(tmp_path):
    from csadmin.shared import rendezvous
    from csadmin.launch import task

    rendezvous.write_layout(str(tmp_path), rendezvous.Layout(0, 1, 4))
    env = task.role_env("worker", str(tmp_path), {"SLURM_PROCID": "3", "CS_INPUT_WORKER_BIND": "tcp://x:*"})
    assert (env[rendezvous.WORKER_ENV], env["CSTORCH_MODE"]) == ("2", "validate_only")
    assert env[rendezvous.DIR_ENV] == str(tmp_path)
    with pytest.raises(ValueError, match="not one of the 4 input workers"):
        task.role_env("worker", str(tmp_path), {"SLURM_PROCID": "5"})
    env = task.role_env("trainer", str(tmp_path), {"SLURM_PROCID": "0", rendezvous.WORKER_ENV: "1"})
    assert rendezvous.WORKER_ENV not in env and env[rendezvous.BIND_ENV].startswith("tcp://")
    assert env[rendezvous.BIND_ENV].endswith(":*")
    given = task.role_env("trainer", str(tmp_path), {"CS_INPUT_WORKER_BIND": "tcp://10.1.2.3:5555"})
    assert given[rendezvous.BIND_ENV] == "tcp://10.1.2.3:5555"  # the user's choice wins


def test_sizing_feeds_the_estimate_with_headroom():
    s = sizing.size([600.0, 640.0, 700.0], cpus_per_task=2, target=2000.0, node_cpus=4, current_workers=3)
    assert s.per_worker == 640.0 and s.per_cpu == 320.0
    assert s.workers == 4 and (s.tasks_per_node, s.nodes) == (2, 2)  # ceil(2000*1.25/640); 4 cpus // 2
    assert s.input_bound and not s.flagged  # 3 x 640 = 1920: below the estimate, above half
    fast = sizing.size([5000.0], 1, 2000.0, 64, 1)
    assert (fast.workers, fast.nodes, fast.tasks_per_node, fast.input_bound) == (1, 1, 1, False)


def test_mode_and_system_leave_the_script_arguments():
    mode, rest = args.mode_of(["train.py", "--mode=compile_only", "--x", "1"])
    assert (mode, rest) == ("compile_only", ["train.py", "--x", "1"])
    value, rest = args.take_option(["a", "--cs_ip", "cs1", "b"], "--cs_ip")
    assert (value, rest) == ("cs1", ["a", "b"])
    with pytest.raises(errors.UsageError, match="--cs_ip needs a value"):
        args.take_option(["a", "--cs_ip"], "--cs_ip")
    with pytest.raises(errors.UsageError, match="no python-ws or python-pt SCRIPT"):
        args.split_script(["--total-nodes", "2"], ("python-ws", "python-pt"), "usage")


def test_the_system_node_is_the_one_whose_settings_name_its_csd(tmp_path):
    (tmp_path / "slurm.conf").write_text("")
    (tmp_path / "cs-slurm.n1.env").write_text("CS_CONNECT=/run/a/csd.json\nCS_KEY=/k\n")
    (tmp_path / "cs-slurm.n2.env").write_text("export CS_CONNECT='/run/b/csd.json'\n")
    env = {"SLURM_CONF": str(tmp_path / "slurm.conf")}
    assert nodes.node_of("/run/b/csd.json", env) == "n2"
    assert nodes.node_of("/run/a/csd.json", env) == "n1"
    assert nodes.node_of("tcp://elsewhere:1", env) is None


def test_artifacts_lookup(tmp_path):
    from csadmin.cstorch.core import artifacts

    checksum = "ab" * 32
    directory = tmp_path / f"cs_{checksum[:16]}"
    directory.mkdir()
    descriptor = {"fingerprint": f"sha256:{checksum}", "target_system": "CS2-A", "est_samples_per_sec": 10.0,
                  "compile_time": 1.5}
    (directory / "program.json").write_text(json.dumps({"descriptor": descriptor}))
    assert artifacts.lookup(str(tmp_path), checksum, "CS2-A").est_samples_per_sec == 10.0
    with pytest.raises(errors.IncompatibleProgram, match="compiled for system CS2-A, not CS2-B: when you compile "
                                                         "your model on one CS system, you cannot run"):
        artifacts.lookup(str(tmp_path), checksum, "CS2-B")
    assert artifacts.lookup(str(tmp_path), "cd" * 32, "CS2-A") is None  # another program
    (directory / "program.json").write_text("{not json")
    assert artifacts.lookup(str(tmp_path), checksum, "CS2-B") is None  # unreadable: compiled again
    assert os.path.isdir(directory)
