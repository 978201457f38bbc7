"""cstorch.configure: every parameter of 004's table, validated, once per process; compile()
checks the system (reachable, ACTIVE, the backend's execution mode) before any step."""

import os
import sys
import time

import pytest
import torch
import yaml

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import config, csd_link, process_backend
from tests.cstorch.helpers import Trainer, batches, configure, model


def test_defaults_are_the_documents_and_csd_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("CS_CONNECT", "/somewhere/csd.json")
    monkeypatch.setenv("CS_KEY", "/somewhere/me.key_secret")
    monkeypatch.chdir(tmp_path)
    c = cstorch.configure(compile_dir=str(tmp_path / "compile"))
    assert (c.model_dir, c.compile_only, c.validate_only, c.checkpoint_steps, c.num_csx, c.max_wgt_servers,
            c.mount_dirs, c.python_paths, c.transfer_processes, c.num_workers_per_csx, c.job_labels,
            c.max_act_per_csx) == ("./", False, False, 0, 1, 24, (), (), 5, 1, (), 1)
    assert config.Config().compile_dir == "/opt/cerebras/cached_compile"
    assert (c.mgmt_address, c.key) == ("/somewhere/csd.json", "/somewhere/me.key_secret")


def test_every_parameter_is_accepted_and_checkpoint_steps_reach_the_run_state(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "data").mkdir()
    c = cstorch.configure(
        model_dir=str(tmp_path / "m"), compile_dir=str(tmp_path / "c"), compile_only=True, validate_only=False,
        checkpoint_steps=100, num_csx=1, max_wgt_servers=4, mount_dirs=[str(tmp_path / "data")],
        python_paths=[str(tmp_path)], transfer_processes=2, num_workers_per_csx=1,
        job_labels=["team=ml", "purpose=test"], max_act_per_csx=2, mgmt_address="tcp://127.0.0.1:1", key="k")
    assert c.labels == {"team": "ml", "purpose": "test"}
    assert str(tmp_path) in sys.path  # this process is the worker: it imports from python_paths
    assert process_backend.current().checkpoint_steps == 100
    assert os.path.isdir(tmp_path / "m") and os.path.isdir(tmp_path / "c")


def test_none_is_the_default_as_the_runner_passes_what_its_yaml_leaves_out(tmp_path, monkeypatch):
    monkeypatch.setenv("CS_CONNECT", "/somewhere/csd.json")
    c = cstorch.configure(model_dir=str(tmp_path), compile_dir=str(tmp_path / "c"), checkpoint_steps=None,
                          max_act_per_csx=None, mgmt_address=None, seed=None, job_time_sec=None,
                          disable_version_check=None, debug_args=None, execution_strategy=None)
    assert (c.checkpoint_steps, c.max_act_per_csx, c.mgmt_address, c.seed, c.job_time_sec,
            c.disable_version_check, c.debug_args, c.execution_strategy) == (
        0, 1, "/somewhere/csd.json", None, None, False, None, None)


def test_a_second_call_is_refused_with_the_documents_reason(tmp_path):
    cstorch.configure(model_dir=str(tmp_path), compile_dir=str(tmp_path / "c"))
    with pytest.raises(errors.InvalidState) as exc:
        cstorch.configure(model_dir=str(tmp_path), compile_dir=str(tmp_path / "c"))
    assert exc.value.message == (
        "cstorch.configure was already called in this process: multiple CS runs in a single process are not "
        "supported: configure can only be called once and applies globally.")
    assert exc.value.hint == "Any runs with different configurations must be run in separate processes."


@pytest.mark.parametrize("kwargs, message", [
    ({"num_csx": 2}, "configure: num_csx=2 cannot be honoured: csd manages one CS-2 system."),
    ({"num_csx": 0}, "configure: num_csx must be an integer ≥ 1, not 0."),
    ({"num_workers_per_csx": -1}, "configure: num_workers_per_csx must be an integer ≥ 0, not -1."),
    ({"checkpoint_steps": -1}, "configure: checkpoint_steps must be an integer ≥ 0, not -1."),
    ({"checkpoint_steps": True}, "configure: checkpoint_steps must be an integer ≥ 0, not True."),
    ({"max_wgt_servers": "24"}, "configure: max_wgt_servers must be an integer ≥ 1, not '24'."),
    ({"compile_only": "yes"}, "configure: compile_only must be True or False, not 'yes'."),
    ({"compile_only": True, "validate_only": True}, "configure: compile_only and validate_only exclude each other."),
    ({"job_labels": ["team"]}, "configure: job_labels must be 'key=value' (an equal-sign-separated pair), not 'team'."),
    ({"job_labels": "team=ml"}, "configure: job_labels must be a list of 'key=value' strings, not 'team=ml'."),
    ({"mount_dirs": ["/no/such/dir"]}, "configure: mount_dirs entry '/no/such/dir' is not a directory on this node."),
    ({"model_dir": "/proc/no-model-dir"}, "configure: model_dir '/proc/no-model-dir' cannot be created: No such file or directory."),
    ({"bogus": 1, "other": 2}, "configure: unknown parameter(s) bogus, other."),
    ({"seed": 1.5}, "configure: seed must be None or a 64-bit integer (torch.manual_seed's), not 1.5."),
    ({"job_time_sec": 0}, "configure: job_time_sec must be None or an integer ≥ 1, not 0."),
    ({"debug_args": {"ini": {}}}, "configure: debug_args must be None or a DebugArgs, not {'ini': {}}."),
    ({"execution_strategy": "weight streaming"},
     "configure: execution_strategy must be None or an ExecutionStrategy, not 'weight streaming'."),
    ({"disable_version_check": "no"}, "configure: disable_version_check must be True or False, not 'no'."),
    ({"credentials_path": ""}, "configure: credentials_path must be None or a file path, not ''."),
])
def test_bad_values_are_refused_with_what_to_do(tmp_path, kwargs, message):
    kwargs.setdefault("compile_dir", str(tmp_path / "c"))
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.configure(**kwargs)
    assert exc.value.message == message
    assert exc.value.hint
    assert process_backend.current().config is None  # nothing was configured: a corrected call may follow


def test_num_workers_per_csx_0_lets_the_system_choose(tmp_path):
    """R1.8's ModelZoo passes 0 by default ("a value based on the model"): here, the default."""
    config = cstorch.configure(model_dir=str(tmp_path), compile_dir=str(tmp_path / "c"), num_workers_per_csx=0)
    assert config.num_workers_per_csx == 1
    assert not config.fed_by_workers


def test_compile_before_configure_is_refused():
    with pytest.raises(errors.InvalidState) as exc:
        cstorch.compile(torch.nn.Linear(2, 2), backend="wse_ws")
    assert exc.value.message == "cstorch.configure has not been called in this process."


def test_compile_refuses_an_unknown_backend_and_a_non_module(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.compile(model(), backend="gpu")
    assert exc.value.message == "compile: unknown backend 'gpu'."
    assert exc.value.hint == "Use one of 'wse_ws', 'wse_pl' (WEIGHT_STREAMING, PIPELINED)."
    with pytest.raises(errors.InvalidArgument, match="model must be a torch.nn.Module, not function"):
        cstorch.compile(lambda x: x, backend="wse_ws")


def test_compile_accepts_the_backend_in_any_case_and_sets_the_execution_mode(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    assert process_backend.current().execmode is None
    cstorch.compile(model(), backend="WSE_WS")
    assert process_backend.current().execmode == "WEIGHT_STREAMING"


def test_compile_refuses_a_backend_for_another_execution_mode(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    with pytest.raises(errors.IncompatibleProgram) as exc:
        cstorch.compile(model(), backend="wse_pl")
    assert exc.value.message == "backend='wse_pl' compiles for PIPELINED, but the system runs in WEIGHT_STREAMING."
    assert exc.value.hint.startswith("Use backend='wse_ws', or ask an admin to switch the execution mode")


def test_compile_refuses_a_system_in_standby(make_csd, tmp_path):
    daemon = make_csd().start()
    with daemon.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=20)
    configure(daemon, tmp_path)
    with pytest.raises(errors.InvalidState) as exc:
        cstorch.compile(model(), backend="wse_pl")
    assert "is STANDBY (health STANDBY), not ACTIVE" in exc.value.message
    assert "cs system activate" in exc.value.hint


def test_compile_says_csd_is_unreachable_within_the_client_timeout(make_csd, tmp_path):
    daemon = make_csd().start()
    daemon.kill9()  # its connection file and keys stay: csd is just not there
    configure(daemon, tmp_path)
    start = time.monotonic()
    with pytest.raises(errors.Unreachable) as exc:
        cstorch.compile(model(), backend="wse_ws")
    assert time.monotonic() - start < csd_link.CLIENT_TIMEOUT + 2.0
    assert exc.value.hint


def test_compile_refuses_weights_that_are_not_float32(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidArgument, match="Only mixed precision is supported: weights are stored as "
                                                     "float32, but 0.weight is torch.float16"):
        cstorch.compile(model().half(), backend="wse_ws")


def test_csrun_wse_worker_tasks_set_num_workers_per_csx(tmp_path, monkeypatch):
    """Under csrun_wse with worker nodes the job's layout says how many input workers feed the
    run, whatever the script asked; a damaged layout is refused, saying what to do."""
    from csadmin.shared import rendezvous

    rendezvous.write_layout(str(tmp_path), rendezvous.Layout(0, 1, 6))
    monkeypatch.setenv(rendezvous.DIR_ENV, str(tmp_path))
    c = cstorch.configure(model_dir=str(tmp_path / "m"), compile_dir=str(tmp_path / "c"), num_workers_per_csx=2)
    assert (c.num_workers_per_csx, c.workers_rendezvous, c.fed_by_workers) == (6, str(tmp_path), True)
    assert "workers_rendezvous" not in config.PARAMETERS  # not a configure argument


def test_a_damaged_rendezvous_is_refused(tmp_path, monkeypatch):
    from csadmin.shared import rendezvous

    (tmp_path / rendezvous.LAYOUT).write_text("{not json")
    monkeypatch.setenv(rendezvous.DIR_ENV, str(tmp_path))
    with pytest.raises(errors.InvalidState, match="layout.json is missing or damaged") as exc:
        cstorch.configure(model_dir=str(tmp_path / "m"), compile_dir=str(tmp_path / "c"))
    assert "csrun_wse" in exc.value.hint


def test_the_runners_keywords_seed_torch_limit_the_run_and_are_recorded(ws_csd, tmp_path, capsys):
    """R1.8's runner: seed (torch seeded before the model is built), job_time_sec (the run's
    limit, on the Config for csd), and the appliance client's settings: accepted, in the run's
    yaml, said once on stderr to change nothing here."""
    from csadmin.cstorch.backend.appliance import ExecutionStrategy, get_debug_args, update_debug_args_with_autogen_policy

    (tmp_path / "debug.txt").write_text("debug_usr { }\n")
    debug_args = get_debug_args(str(tmp_path / "debug.txt"))
    update_debug_args_with_autogen_policy(debug_args, "medium")
    c = configure(ws_csd, tmp_path, seed=1234, job_time_sec=600, debug_args=debug_args,
                  credentials_path="/opt/cerebras/certs/tls.crt",
                  execution_strategy=ExecutionStrategy.ES_WEIGHT_STREAMING,
                  disable_version_check=True)
    net = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))  # after configure
    torch.manual_seed(1234)
    assert torch.equal(net[0].weight, torch.nn.Linear(8, 32).weight)  # so its weights follow the seed
    assert c.job_time_sec == 600 and c.seed == 1234
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if "change nothing here" in line]
    assert lines == ["cstorch: configure: debug_args, credentials_path, execution_strategy, disable_version_check "
                     "recorded in the run's yaml; they change nothing here (no appliance: csd runs the simulated "
                     "CS-2, your key authenticates this client, and the compile backend sets the execution mode)."]
    t = Trainer(net)
    for x, y in batches(2):
        t.step(x, y)
    runconfig = yaml.safe_load((tmp_path / "model" / "train" / "params_train.yaml").read_text())["runconfig"]
    assert {k: runconfig[k] for k in ("seed", "job_time_sec", "debug_args", "credentials_path",
                                      "execution_strategy", "disable_version_check")} == {
        "seed": 1234, "job_time_sec": 600,
        "debug_args": {"file": str(tmp_path / "debug.txt"), "autogen_policy": "medium"},
        "credentials_path": "/opt/cerebras/certs/tls.crt", "execution_strategy": "WEIGHT_STREAMING",
        "disable_version_check": True}


def test_an_execution_strategy_for_another_mode_is_refused_at_compile(ws_csd, tmp_path):
    from csadmin.cstorch.backend.appliance import ExecutionStrategy

    configure(ws_csd, tmp_path, execution_strategy=ExecutionStrategy.ES_PIPELINE)
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.compile(model(), backend="WSE_WS")
    assert exc.value.message == ("compile: backend 'WSE_WS' compiles for WEIGHT_STREAMING, but configure's "
                                 "execution_strategy says PIPELINED.")


def test_the_appliance_helpers_refuse_what_they_cannot_read(tmp_path):
    from csadmin.cstorch.backend.appliance import get_debug_args, update_debug_args_with_autogen_policy

    with pytest.raises(errors.NotFound, match="no debug args file"):
        get_debug_args(str(tmp_path / "missing.txt"))
    assert get_debug_args(None).settings() == {}
    with pytest.raises(errors.InvalidArgument, match="'fast' is not an autogen policy") as exc:
        update_debug_args_with_autogen_policy(get_debug_args(None), "fast")
    assert exc.value.hint == "Valid policies: default, disabled, medium, aggressive."
