"""The run on csd as a cstorch script lives it: aborted from the system's side (runs abort,
standby --force, a critical fault) the next steps raise RunAborted with csd's reason; Ctrl-C
closes the run; `python -m csadmin.cstorch` runs an unmodified `cerebras_pytorch` script."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import zmq

from csadmin import errors
from csadmin.cstorch.backend import csd_link, process_backend
from tests.cstorch.helpers import Trainer, batches, configure, model, run_record
from tests.harness import ROOT, wait_until


def step_until_aborted(trainer, timeout: float = 10.0) -> tuple[errors.RunAborted, int]:
    """Step until RunAborted; return it and how many steps still ran (csd's event is pushed, so
    at most the steps of its few milliseconds in flight)."""
    data = batches(2)
    deadline = time.monotonic() + timeout
    ran = 0
    while True:
        try:
            trainer.step(*data[ran % 2])
        except errors.RunAborted as exc:
            return exc, ran
        ran += 1
        assert time.monotonic() < deadline, "no RunAborted"


def started(ws_csd, tmp_path) -> tuple[Trainer, str]:
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    t.step(*batches(1)[0])
    return t, process_backend.current().csd.run.id


def test_an_admin_abort_raises_run_aborted_with_its_reason(ws_csd, tmp_path):
    t, run_id = started(ws_csd, tmp_path)
    with ws_csd.client() as c:
        c.runs_abort(run_id, reason="wafer maintenance at noon")
    # csd's event is pushed; how many steps run while it is in flight depends on the machine's
    # load, so wait for it to reach this process: then the very next step raises.
    events = process_backend.current().csd._events
    wait_until(lambda: events.get(zmq.EVENTS) & zmq.POLLIN, what="csd's abort event to reach the runtime")
    exc, ran = step_until_aborted(t)
    assert exc.message == f"Run {run_id} was aborted on the system: wafer maintenance at noon."
    assert "resuming from its last checkpoint" in exc.hint
    assert ran == 0
    with pytest.raises(errors.RunAborted):  # and every later step
        t.step(*batches(1)[0])
    process_backend.reset()  # the process's end: nothing left to close, no error


def test_a_forced_standby_raises_run_aborted(ws_csd, tmp_path):
    t, run_id = started(ws_csd, tmp_path)
    try:
        with ws_csd.client() as c:
            c.system_standby(force=True)
        exc, _ = step_until_aborted(t)
        assert exc.message.startswith(f"Run {run_id} was aborted on the system: ")
        assert "standby" in exc.message
    finally:
        with ws_csd.client() as c:
            c.wait_for(state="STANDBY", timeout=20)
            c.system_activate()
            c.wait_for(state="ACTIVE", timeout=20)


def test_a_critical_fault_raises_run_aborted_naming_it(ws_csd, tmp_path):
    t, run_id = started(ws_csd, tmp_path)
    try:
        with ws_csd.client() as c:
            c.fault_inject("temperature-high-critical")
        exc, _ = step_until_aborted(t)
        assert exc.fault == "temperature-high-critical"
        assert "temperature-high-critical" in exc.message and "(injected)" in exc.message
    finally:
        with ws_csd.client() as c:
            c.fault_clear(all=True)


def test_an_abort_the_event_missed_still_comes_from_the_next_stream(ws_csd, tmp_path):
    t, run_id = started(ws_csd, tmp_path)
    s = process_backend.current().csd
    s._events.close()  # as if every pushed event were lost: the next run.stream says it
    s._events = None
    s.run.stop_heartbeats()
    with ws_csd.client() as c:
        c.runs_abort(run_id, reason="lost event")
    start = time.monotonic()
    exc, ran = step_until_aborted(t)
    assert exc.message == f"Run {run_id} was aborted on the system: lost event."
    assert time.monotonic() - start < csd_link.STREAM_EVERY_SECONDS + 3.0


SCRIPT = textwrap.dedent('''
    import sys
    import torch
    import cerebras_pytorch.experimental as cstorch
    import cerebras_pytorch.experimental.optim as optim

    import csadmin.cstorch
    # R1.8's package: csadmin.cstorch's names, with R1.8's compile (parameters then on "xla")
    assert cstorch.configure is csadmin.cstorch.configure and optim is csadmin.cstorch.optim
    cstorch.configure(model_dir=sys.argv[1], compile_dir=sys.argv[1] + "/compile")
    torch.manual_seed(0)
    net = torch.nn.Linear(8, 2)
    compiled = cstorch.compile(net, backend="wse_ws")
    optimizer = optim.SGD(net.parameters(), lr=0.1)

    @cstorch.compile_step
    def training_step(x, y):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        return loss

    @cstorch.step_closure
    def post(loss, i):
        print(f"step {i} loss {loss.item():.4f}", flush=True)

    x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
    steps = int(sys.argv[2])
    i = 0
    while steps < 0 or i < steps:
        post(training_step(x, y), i)
        i += 1
    if len(sys.argv) > 3:  # then fail between steps, outside any cstorch call
        raise {"interrupt": KeyboardInterrupt, "error": ValueError}[sys.argv[3]]("bad batch file")
''')


def run_script(ws_csd, tmp_path, steps: int, *more: str, **popen):
    path = tmp_path / "script.py"
    path.write_text(SCRIPT)
    return subprocess.Popen(
        [sys.executable, "-m", "csadmin.cstorch", str(path), str(tmp_path / "model"), str(steps), *more],
        env=ws_csd.env(), cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def test_python_m_runs_an_unmodified_cerebras_pytorch_script(ws_csd, tmp_path):
    proc = run_script(ws_csd, tmp_path, 12)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert out.count("loss") == 12
    record = run_record(ws_csd)
    assert (record["status"], record["totalSamples"]) == ("CLOSED", 12 * 16)  # closed at the process's end
    with open(tmp_path / "model" / "performance" / "performance.json") as f:
        assert json.load(f)["total_samples"] == 192
    check = subprocess.run([sys.executable, "-c", "import cerebras_pytorch"], capture_output=True, text=True,
                           cwd=ROOT)
    assert "No module named 'cerebras_pytorch'" in check.stderr  # only the script's process sees it


def test_python_m_says_how_to_use_it():
    bad = subprocess.run([sys.executable, "-m", "csadmin.cstorch", "/no/such/script.py"], capture_output=True,
                         text=True, cwd=ROOT)
    assert bad.returncode == 2
    # SCRIPT may also name a console script (`cszoo fit …`), so the refusal and the usage say both.
    assert bad.stderr == ("python -m csadmin.cstorch: no such script or console script: /no/such/script.py\n"
                          "usage: python -m csadmin.cstorch SCRIPT|CONSOLE_SCRIPT [ARGS...]\n")


def _ctrl_c_at_step_20(ws_csd, proc) -> dict:
    """Ctrl-C the training script `proc` once it prints step 20; the script dies of it, and csd
    records the run ABORTED by the interrupt with the fabric free. The run's record."""
    try:
        wait_until(lambda: proc.stdout.readline().startswith("step 20 "), timeout=60, what="step 20")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    record = run_record(ws_csd)
    assert (record["status"], record["abortReason"]) == ("ABORTED", "runtime interrupted (Ctrl-C)")
    assert record["totalSamples"] >= 20 * 16
    with ws_csd.client() as c:
        assert c.runs_list()["runHolder"] is None
    return record


def test_ctrl_c_closes_the_run_and_frees_the_fabric(ws_csd, tmp_path):
    proc = run_script(ws_csd, tmp_path, -1)
    _ctrl_c_at_step_20(ws_csd, proc)
    assert os.path.exists(tmp_path / "model" / "performance" / "performance.json")


def test_a_fabric_held_by_another_run_is_busy_and_the_step_may_be_retried(ws_csd, tmp_path):
    configure(ws_csd, tmp_path)
    t = Trainer(model())
    x, y = batches(1)[0]
    with ws_csd.client() as other:
        held = other.open_run(mode="train", owner="someone-else")
        with pytest.raises(errors.Busy, match="someone-else"):
            t.step(x, y)
        held.close()
    assert process_backend.current().run.program is None and all(p.grad is None for p in t.net.parameters())
    t.step(x, y)  # captured again, and this time the run opens
    assert run_record(ws_csd)["owner"].startswith("cstorch ")


def test_csd_gone_mid_run_is_a_clear_error_within_the_client_timeout(make_csd, tmp_path, monkeypatch):
    monkeypatch.setattr(csd_link, "CLIENT_TIMEOUT", 1.0)
    daemon = make_csd().start()
    from tests.cstorch.helpers import weight_streaming

    weight_streaming(daemon)
    configure(daemon, tmp_path)
    t = Trainer(model())
    data = batches(2)
    t.step(*data[0])
    daemon.kill9()
    start = time.monotonic()
    with pytest.raises(errors.Unreachable):
        for i in range(100_000):
            t.step(*data[i % 2])
    assert time.monotonic() - start < csd_link.STREAM_EVERY_SECONDS + csd_link.CLIENT_TIMEOUT + 3.0


@pytest.mark.parametrize("how, reason", [
    ("interrupt", "runtime interrupted (Ctrl-C)"),
    ("error", "runtime failed: ValueError: bad batch file"),
])
def test_an_uncaught_exception_between_steps_ends_the_run_with_it(ws_csd, tmp_path, how, reason):
    proc = run_script(ws_csd, tmp_path, 3, how)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "bad batch file" in err
    record = run_record(ws_csd)
    assert (record["status"], record["abortReason"], record["totalSamples"]) == ("ABORTED", reason, 3 * 16)


def test_a_run_past_its_job_time_sec_is_aborted_by_csd_with_that_reason(ws_csd, tmp_path):
    """configure(job_time_sec=N), as R1.8's runner passes it (and the later ClusterConfig's): csd
    aborts the run N seconds after it opened, however alive its runtime is."""
    configure(ws_csd, tmp_path, job_time_sec=1)
    t = Trainer(model())
    t.step(*batches(1)[0])
    run_id = process_backend.current().csd.run.id
    with ws_csd.client() as c:
        assert c.runs_show(run_id)["timeLimitUntil"] is not None
    events = process_backend.current().csd._events
    wait_until(lambda: events.get(zmq.EVENTS) & zmq.POLLIN, what="csd's abort event to reach the runtime")
    exc, ran = step_until_aborted(t)
    assert exc.message == (f"Run {run_id} was aborted on the system: time limit exceeded (job_time_sec: the run "
                           "may last 1 s).")
    assert ran == 0
    with ws_csd.client() as c:
        record = c.runs_show(run_id)
    assert (record["status"], record["abortReason"]) == ("ABORTED", "time limit exceeded (job_time_sec: the run may "
                                                                    "last 1 s)")


V2_SCRIPT = textwrap.dedent('''
    import sys
    import torch
    import cerebras.pytorch as cstorch

    backend = cstorch.backend("CSX", artifact_dir=sys.argv[1])
    with backend.device:
        net = torch.nn.Linear(8, 2)
    compiled = cstorch.compile(net, backend)
    optimizer = cstorch.optim.SGD(net.parameters(), lr=0.1)

    @cstorch.trace
    def training_step(batch):
        x, y = batch
        loss = torch.nn.functional.cross_entropy(compiled(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    @cstorch.step_closure
    def post(loss, i):
        print(f"step {i} loss {loss.item():.4f}", flush=True)

    def input_fn():
        x = torch.randn(64, 8)
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long()), batch_size=16,
                                           drop_last=True)

    executor = cstorch.utils.data.DataExecutor(cstorch.utils.data.DataLoader(input_fn), num_steps=10**9,
                                               activation_steps=1)
    for i, batch in enumerate(executor, 1):
        post(training_step(batch), i)
''')


def test_ctrl_c_in_a_data_executors_loop_closes_its_run(ws_csd, tmp_path):
    """The later releases' loop: Ctrl-C ends the executor's run ABORTED, frees the fabric and
    writes its performance.json in its own directory, as an R1.8 run's."""
    path = tmp_path / "script_v2.py"
    path.write_text(V2_SCRIPT)
    proc = subprocess.Popen([sys.executable, "-m", "csadmin.cstorch", str(path), str(tmp_path / "out")],
                            env=ws_csd.env(), cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    record = _ctrl_c_at_step_20(ws_csd, proc)
    with open(tmp_path / "out" / "executors" / "000001" / "performance.json") as f:
        assert json.load(f)["total_samples"] == record["totalSamples"]
