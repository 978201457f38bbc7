"""The later releases' backend against a real csd: `cstorch.backend(...)` is the one process
backend configure fills (one per process, before any optimizer), `cstorch.backend()` returns it,
its cluster config goes through configure's rules, `cstorch.backends.csx` settings are checked,
a changed graph on retrace and `load_state_dict(assign=True)` after compile are refused, and a
CPU backend runs the same script with no system."""

import os
import re
import subprocess
import sys
import textwrap
import warnings

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.backend import process_backend
from tests.cstorch.helpers import configure, model
from tests.cstorch.v2 import Trainer, csx, input_fn, train_saving_checkpoints
from tests.harness import ROOT


def test_backend_is_the_process_backend_and_backend_returns_it(ws_csd, tmp_path):
    with pytest.raises(errors.InvalidState, match="^No active Cerebras backend found"):
        cstorch.backend()
    assert cstorch.current_backend(raise_exception=False, raise_warning=False) is None
    backend = csx(ws_csd, tmp_path)
    assert backend is process_backend.current() and cstorch.backend() is backend
    assert (backend.is_csx, backend.is_cpu, backend.is_gpu, backend.kind) == (True, False, False, "CSX")
    assert backend.artifact_dir == str(tmp_path / "out") and os.path.isdir(tmp_path / "out")
    assert str(backend.device) == "CSX" and backend.device.torch_device == torch.device("cpu")
    with pytest.warns(DeprecationWarning, match=r"cstorch.current_backend\(\) is deprecated"):
        assert cstorch.current_backend() is backend
    compiled = cstorch.compile(model(), backend)
    assert compiled.backend is backend


def test_a_second_backend_and_a_backend_after_configure_are_refused(ws_csd, tmp_path):
    csx(ws_csd, tmp_path)
    with pytest.raises(errors.InvalidState) as exc:
        cstorch.backend("CPU")
    assert exc.value.message == ("Cannot instantiate multiple backends: a backend with type CSX has already been "
                                 "instantiated in this process.")
    assert "Use cstorch.backend() to access the existing backend" in exc.value.hint
    process_backend.reset()
    configure(ws_csd, tmp_path / "r18")
    with pytest.raises(errors.InvalidState, match=r"type CSX \(cstorch.configure\) has already been instantiated"):
        cstorch.backend("CSX")


def test_the_backend_must_exist_before_an_optimizer(ws_csd, tmp_path):
    """The real optimizer is built on the backend's device: built before any backend, it is
    refused then and there (the real RuntimeError), and the corrected order works."""
    net = model()
    with pytest.raises(errors.InvalidState) as exc:
        cstorch.optim.SGD(net.parameters(), lr=0.1)
    assert isinstance(exc.value, RuntimeError)
    assert exc.value.message.startswith("No active Cerebras backend found. Please make sure that your model has been "
                                        "prepared for compilation")
    assert exc.value.hint == ("Create the backend first (cstorch.backend(...), or cstorch.configure(...) in R1.8), "
                              "then build the model, compile it, and only then make the optimizer.")
    assert process_backend.current().config is None and not process_backend.current().announced(object)
    csx(ws_csd, tmp_path)  # nothing was made: the corrected script follows
    cstorch.compile(net, cstorch.backend())
    assert cstorch.optim.SGD(net.parameters(), lr=0.1).param_groups[0]["lr"] == 0.1


def test_an_unknown_backend_type_and_argument_are_refused(ws_csd, tmp_path):
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.backend("TPU")
    assert exc.value.message == ("Invalid Cerebras PyTorch backend type specified. Expected one of ['CPU', 'GPU', "
                                 "'CSX', 'WSE']. Got TPU.")
    with pytest.raises(errors.InvalidArgument) as exc:
        cstorch.backend("CSX", artifact_dir=str(tmp_path), model_dir="x")
    assert "unexpected keyword argument 'model_dir'" in exc.value.message
    assert exc.value.hint.startswith("Valid arguments: artifact_dir, compile_dir, compile_only, validate_only, "
                                     "cluster_config")
    with pytest.raises(errors.InvalidArgument, match="Passing mixed_precision to the CPU backend is no longer allowed"):
        cstorch.backend("CPU", mixed_precision=True)


def test_the_cluster_config_goes_through_configures_rules(ws_csd, tmp_path):
    cluster = cstorch.distributed.ClusterConfig(mgmt_address=ws_csd.connection_file,
                                                credentials_path=ws_csd.admin_key, num_csx=2)
    with pytest.raises(errors.InvalidArgument) as exc:
        csx(ws_csd, tmp_path, cluster_config=cluster)
    assert exc.value.message == "cstorch.backend('CSX'): num_csx=2 cannot be honoured: csd manages one CS-2 system."
    cluster.num_csx, cluster.num_workers_per_csx, cluster.job_labels = 1, 2, ["team=nlp"]
    backend = csx(ws_csd, tmp_path, cluster_config=cluster)
    assert (backend.config.num_workers_per_csx, backend.config.labels) == (2, {"team": "nlp"})
    # 2.0–2.1: the DataExecutor's cs_config, checked the same way
    cs_config = cstorch.utils.CSConfig(num_workers_per_csx=1, max_wgt_servers=1, mount_dirs=[str(tmp_path)])
    Trainer(backend, model)
    cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=2, cs_config=cs_config)
    assert (backend.config.num_workers_per_csx, backend.config.max_wgt_servers) == (1, 1)
    with pytest.raises(errors.InvalidArgument, match="cs_config: mount_dirs entry '/no/such' is not a directory"):
        cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=2,
                                        cs_config=cstorch.utils.CSConfig(mount_dirs=["/no/such"]))


def test_the_csx_settings_are_the_backends_and_checked(ws_csd, tmp_path):
    assert cstorch.backends.csx.precision.optimization_level == 1
    cstorch.backends.csx.precision.optimization_level = 2
    cstorch.backends.csx.performance.micro_batch_size = None
    with pytest.raises(errors.InvalidArgument, match=r"optimization_level must be None or an integer in range "):
        cstorch.backends.csx.precision.optimization_level = 3
    with pytest.raises(errors.InvalidArgument, match="micro_batch_size must be"):
        cstorch.backends.csx.performance.micro_batch_size = "fast"
    with pytest.raises(AttributeError, match="has no setting 'optimisation_level'"):
        cstorch.backends.csx.precision.optimisation_level = 1
    # the real package's other settings, as public scripts set them (gigaGPT's train.py: the
    # coordinator's memory limits), are taken, checked and recorded
    cstorch.backends.csx.debug.execute_crd_memory_gi = 32
    cstorch.backends.csx.debug.compile_crd_memory_gi = 50
    cstorch.backends.csx.performance.transfer_processes = 4
    cstorch.backends.csx.storage.s3.profile = "lab"
    with pytest.raises(errors.InvalidArgument, match=r"debug.wrk_memory_gi must be None or a positive number of GiB"):
        cstorch.backends.csx.debug.wrk_memory_gi = 0
    with pytest.raises(errors.InvalidArgument, match=r"debug.drop_data must be True or False, not 'yes'"):
        cstorch.backends.csx.debug.drop_data = "yes"
    backend = csx(ws_csd, tmp_path)
    assert backend.csx.precision.optimization_level == 2  # set before the backend: the same object's
    t = Trainer(backend, model)
    for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=1):
        t.step(batch)
    log = "".join((tmp_path / "compile" / d / "compile.log").read_text() for d in os.listdir(tmp_path / "compile"))
    assert "'optimization_level': 2" in log and "'micro_batch_size': None" in log
    assert "'execute_crd_memory_gi': 32" in log and "'transfer_processes': 4" in log
    process_backend.reset()
    assert cstorch.backends.csx.precision.optimization_level == 1  # the next backend starts afresh


def test_a_changed_graph_on_retrace_is_refused(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path, retrace_every_iteration=True)
    t = Trainer(backend, model)
    calls = []

    @cstorch.trace
    def training_step(batch):
        calls.append(1)
        loss = t.body(batch)
        return loss * 2 if len(calls) >= 4 else loss  # a Python branch that flips at the 4th call

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=6)
    done = []
    with pytest.raises(errors.ReprogramForbidden) as exc:
        for batch in executor:
            done.append(training_step(batch))
    assert len(done) == 3 and len(calls) == 4  # steps 1–3 ran (each traced again); step 4's trace was refused
    assert re.fullmatch(r"Traced graph at iteration 4 has more operations \(\d+\) than the traced graph at the "
                        r"first iteration \(\d+\)\.", exc.value.message), exc.value.message
    assert exc.value.hint.startswith("This will cause a second compile which is currently not allowed.")


def test_a_graph_that_stays_the_same_on_retrace_runs(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    cstorch.backends.csx.debug.retrace_every_iteration = True
    t = Trainer(backend, model)
    losses = [t.step(batch).item() for batch in
              cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=5)]
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_a_read_inside_a_traced_step_is_refused_naming_the_trace(ws_csd, tmp_path):
    """The refusals name the step as the script wrote it: a `@cstorch.trace` function, not R1.8's
    compile_step."""
    t = Trainer(csx(ws_csd, tmp_path), model)

    @cstorch.trace
    def training_step(batch):
        loss = t.body(batch)
        print(loss.item())  # a read of a value the system has not computed yet
        return loss

    with pytest.raises(errors.InvalidState) as exc:
        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=2):
            training_step(batch)
    assert "inside the trace function 'training_step' (at test_backend_api.py:" in exc.value.message
    assert "compile_step" not in exc.value.message and "@cstorch.step_closure" in exc.value.hint


def test_load_state_dict_with_assign_after_compile_is_refused(ws_csd, tmp_path):
    backend = csx(ws_csd, tmp_path)
    t = Trainer(backend, model)
    saved = {k: v.clone() + 1 for k, v in t.net.state_dict().items()}
    with pytest.raises(errors.InvalidState) as exc:
        t.net.load_state_dict(saved, assign=True)
    assert exc.value.message.startswith("Cannot call model.load_state_dict(..., assign=True) on a model that has "
                                        "already been compiled")
    assert exc.value.hint.startswith("Please call with assign=False")
    weight = t.net[0].weight
    t.net.load_state_dict(saved)  # copied in place: allowed
    assert t.net[0].weight is weight and torch.equal(weight, saved["0.weight"])


def test_a_cpu_backend_runs_the_same_script_without_a_system(tmp_path, capsys):
    """No csd at all: the CPU backend contacts none; the step runs eagerly (reading a value inside
    it, a wafer rule, is fine), checkpoint closures still run on checkpoint steps."""
    backend = cstorch.backend("CPU", artifact_dir=str(tmp_path / "out"))
    assert "cstorch: backend CPU: the steps run eagerly with PyTorch on this CPU; no system" in capsys.readouterr().err
    assert (backend.is_cpu, backend.is_csx) == (True, False)
    t = Trainer(backend, model)
    values = []

    @cstorch.trace
    def training_step(batch):
        loss = t.body(batch)
        values.append(loss.item())  # eager: allowed
        return loss

    saved = train_saving_checkpoints(t, training_step, tmp_path, num_steps=12, checkpoint_steps=5)
    assert saved == [5, 10, 12] and values[-1] < values[0] / 2
    assert process_backend.current().csd is None


def test_a_2x_script_runs_unmodified_under_python_m_csadmin_cstorch(ws_csd, tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import torch
        import cerebras.pytorch as cstorch
        import cerebras.pytorch.utils.data
        from cerebras.pytorch.utils.tensorboard import SummaryWriter
        from cerebras.pytorch.distributed import ClusterConfig
        import cerebras_pytorch
        from cerebras.pytorch import backends

        assert cerebras_pytorch.trace is cstorch.trace and cerebras.pytorch.utils.data.DataExecutor
        assert backends.csx.precision.optimization_level == 1 and SummaryWriter
        backend = cstorch.backend("CSX", artifact_dir="out", cluster_config=ClusterConfig())
        with backend.device:
            net = torch.nn.Linear(4, 2)
        compiled = cstorch.compile(net, backend)
        optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)

        def input_fn(batch_size):
            data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
            return torch.utils.data.DataLoader(data, batch_size=batch_size, drop_last=True)

        @cstorch.trace
        def step(batch):
            x, y = batch
            loss = torch.nn.functional.cross_entropy(compiled(x), y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss

        for batch in cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn, batch_size=16)):
            step(batch)
        print("steps", cstorch.backend().run.step)
    """))
    done = subprocess.run([sys.executable, "-m", "csadmin.cstorch", str(script)], env=ws_csd.env(), cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert "steps 4" in done.stdout
    assert os.path.isfile(tmp_path / "out" / "executors" / "000001" / "performance.json")
    assert "cerebras" not in subprocess.run([sys.executable, "-c", "import sys; print(list(sys.modules))"],
                                            capture_output=True, text=True, cwd=ROOT).stdout
