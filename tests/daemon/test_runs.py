"""The training runtime's path against a real csd (README, "Training runtimes"): exclusive wafer, one
program per run, compatibility, leases, forced standby, retries, performance records, history
across restarts, and coded errors for bad input."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
import zmq

from csadmin import errors
from csadmin.shared import protocol
from tests.harness import ROOT, Daemon, wait_until

FAST = ["--program-bytes-per-second", "1e9"]  # 1 MB programs in 1 ms


@pytest.fixture(scope="module")
def shared_csd():
    daemon = Daemon(extra_args=FAST).start()
    yield daemon
    daemon.cleanup()


@pytest.fixture
def csd(shared_csd):
    """One csd for the tests that leave it ACTIVE (starting one per test doubles the time);
    each test gets it with no run holding the fabric."""
    yield shared_csd
    with shared_csd.client() as c:
        holder = c.system_show()["runHolder"]
        if holder is not None:
            c.runs_abort(holder["runId"], reason="test cleanup")
        assert c.system_show()["state"] == "ACTIVE"


@pytest.fixture
def own_csd(make_csd):
    """A csd of the test's own, for tests that change the lifecycle or restart it."""
    return make_csd(extra_args=FAST).start()


def descriptor(client, **changes) -> dict:
    snap = client.system_show()
    program = {
        "fingerprint": "sha256:0123", "target_system": snap["serial"], "execmode": snap["activeExecmode"],
        "mode": "train", "compile_time": 12.5, "est_samples_per_sec": 1000.0, "size_bytes": 1_000_000,
    }
    program.update(changes)
    return program


def test_a_second_runtime_is_told_the_wafer_is_busy_and_by_whom(csd):
    with csd.client() as a, csd.client() as b:
        with a.open_run(mode="train", owner="job-42") as run:
            with pytest.raises(errors.Busy) as info:
                b.open_run(mode="eval", owner="job-43")
            assert run.id in info.value.message and "job-42" in info.value.message and "since" in info.value.message
            assert "runs abort" in info.value.hint
            holder = b.system_show()["runHolder"]
            assert holder["runId"] == run.id and holder["owner"] == "job-42" and holder["mode"] == "train"
        # Closed on leaving the block: the wafer is free for the next runtime.
        assert b.system_show()["runHolder"] is None
        with b.open_run(mode="eval", owner="job-43") as second:
            assert second.id != run.id


def test_the_fabric_is_programmed_once_per_run(csd):
    with csd.client() as c, c.open_run() as run:
        record = run.program(descriptor(c))
        assert record["fabric"] == "PROGRAMMED"
        with pytest.raises(errors.ReprogramForbidden) as info:
            run.program(descriptor(c, fingerprint="sha256:other"))
        assert "once per run" in info.value.message and "open a new one" in info.value.hint
        started = c.events_show(event_type="EventProgrammingStarted")
        assert [e["details"]["runId"] for e in started].count(run.id) == 1
        assert c.events_show(event_type="EventProgrammingFinished")[-1]["details"]["runId"] == run.id


def test_programs_for_another_system_or_execution_mode_are_refused(csd):
    with csd.client() as c, c.open_run() as run:
        with pytest.raises(errors.IncompatibleProgram) as info:
            run.program(descriptor(c, target_system="CS2-0999"))
        assert "cannot run on another" in info.value.message
        with pytest.raises(errors.IncompatibleProgram) as info:
            run.program(descriptor(c, execmode="WEIGHT_STREAMING"))
        assert "PIPELINED" in info.value.message and "execmode" in info.value.hint
        with pytest.raises(errors.IncompatibleProgram):
            run.program(descriptor(c, mode="eval"))
        # None of that counted as programming: the right artifact still programs.
        assert run.program(descriptor(c))["fabric"] == "PROGRAMMED"


def test_train_and_eval_is_refused(csd):
    with csd.client() as c:
        with pytest.raises(errors.InvalidArgument) as info:
            c.open_run(mode="train_and_eval")
        assert "train_and_eval is not supported" in info.value.message
        assert c.system_show()["runHolder"] is None
        with c.open_run() as run:
            with pytest.raises(errors.IncompatibleProgram) as info:
                run.program(descriptor(c, mode="train_and_eval"))
            assert "open an eval run" in info.value.hint


def test_runs_open_only_when_active(own_csd):
    with own_csd.client() as c:
        c.system_standby()
        c.wait_for(state="STANDBY", timeout=10)
        with pytest.raises(errors.InvalidState) as info:
            c.open_run()
        assert "STANDBY" in info.value.message


RUNTIME = """
import sys, time
from csadmin.client import Client
c = Client(sys.argv[1])
run = c.open_run(mode="train", owner="doomed", lease_seconds=0.5)
print(run.id, flush=True)
sys.stdin.read()  # holds the run, heartbeating, until killed
"""


def test_a_killed_runtime_frees_the_fabric_within_its_lease_plus_a_second(csd):
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNTIME, csd.endpoint], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env=csd.env(), cwd=ROOT, text=True,
    )
    try:
        run_id = proc.stdout.readline().strip()
        assert run_id.startswith("run-")
        with csd.client() as c:
            first = c.runs_show(run_id)["leaseUntil"]
            # Its heartbeat thread renews the lease while the process lives.
            wait_until(lambda: c.runs_show(run_id)["leaseUntil"] > first + 200, 10, what="a heartbeat")
            proc.kill()
            proc.wait(timeout=10)
            killed = time.monotonic()
            wait_until(lambda: c.system_show()["runHolder"] is None, 10, what="the lease to lapse")
            assert time.monotonic() - killed <= 0.5 + 1.0
            run = c.runs_show(run_id)
            assert run["status"] == "ABORTED" and "lease expired" in run["abortReason"]
            aborted = c.events_show(event_type="EventTrainingAborted")[-1]
            assert aborted["details"]["runId"] == run_id and aborted["severity"] == "WARN"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_standby_is_refused_while_a_run_holds_the_fabric_and_force_aborts_it(own_csd):
    csd = own_csd
    with csd.client() as c:
        run = c.open_run(owner="job-7")
        run.program(descriptor(c))
        r = csd.cs("system", "standby", "--no-confirm")
        assert r.returncode == errors.EXIT_BUSY
        assert run.id in r.stderr and "job-7" in r.stderr
        assert c.system_show()["state"] == "ACTIVE"
        r = csd.cs("system", "standby", "--force")  # still needs confirming in a script
        assert r.returncode == errors.EXIT_USAGE
        r = csd.cs("system", "standby", "--force", "--no-confirm")
        assert r.returncode == 0, r.stderr
        assert c.system_show()["state"] == "STANDBY"
        with pytest.raises(errors.RunAborted) as info:
            run.stream(10)
        assert "--force" in info.value.message
        aborted = c.events_show(event_type="EventTrainingAborted")[-1]["details"]
        assert aborted["runId"] == run.id and "--force" in aborted["reason"]
        run.__exit__(type(info.value), info.value, None)  # leaving the block after RunAborted: nothing to do


def test_the_interactive_confirmation_names_the_run_to_be_aborted(csd):
    from csadmin.cli.action_context import ActionContext
    from csadmin.cli.parse import parse

    class Console:
        interactive = True
        questions: list = []

        def confirm(self, question):
            self.questions.append(question)
            return False

    with csd.client() as c, c.open_run(owner="job-9") as run:
        console = Console()
        with pytest.raises(errors.Cancelled):
            from csadmin.cli import actions

            actions.system_standby(ActionContext(c, console), parse(["system", "standby", "--force"]))
        assert run.id in console.questions[0] and "aborted" in console.questions[0]
        assert c.system_show()["runHolder"]["runId"] == run.id


def _dealer(csd, identity: bytes) -> zmq.Socket:
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, identity)
    csd.secure(sock)
    sock.connect(csd.endpoint)
    return sock


def _ask(sock, frame: bytes) -> dict:
    sock.send(frame)
    assert sock.poll(10_000), "no reply"
    return json.loads(sock.recv())


def test_a_retried_program_request_programs_once_and_gets_the_first_reply(csd):
    sock = _dealer(csd, b"retrying-runtime-0001")
    try:
        opened = _ask(sock, protocol.request("open-1", "run.open", {"mode": "train"}))
        run_id = opened["result"]["runId"]
        with csd.client() as c:
            frame = protocol.request("prog-1", "run.program", {"run_id": run_id, "program": descriptor(c)})
        first = _ask(sock, frame)
        again = _ask(sock, frame)
        assert first["ok"] and again == first
        with csd.client() as c:
            started = c.events_show(event_type="EventProgrammingStarted")
            assert [e["details"]["runId"] for e in started].count(run_id) == 1
        # A new request id is a new attempt: that one is refused.
        other = _ask(sock, frame.replace(b'"prog-1"', b'"prog-2"'))
        assert other["error"]["code"] == "REPROGRAM_FORBIDDEN"
        # A retried stream (a hot op) is not counted twice either.
        stream = protocol.request("s-1", "run.stream", {"run_id": run_id, "samples": 7})
        assert _ask(sock, stream) == _ask(sock, stream)
        assert _ask(sock, protocol.request("show", "runs.show", {"run_id": run_id}))["result"]["totalSamples"] == 7
    finally:
        sock.close(0)


@pytest.mark.parametrize(
    "est, samples, bottleneck",
    [(1e9, 10, True), (1.0, 1_000_000, False)],  # fed far below capacity; fed beyond it
)
def test_the_performance_record_and_input_bottleneck(csd, tmp_path, est, samples, bottleneck):
    with csd.client() as c, c.open_run(owner="job-perf") as run:
        run.program(descriptor(c, est_samples_per_sec=est, compile_time=33.0))
        run.stream(samples)
        perf = run.close(performance_dir=str(tmp_path))
    assert set(perf) == {
        "compile_time", "est_samples_per_sec", "programming_time", "samples_per_sec",
        "suspected_input_bottleneck", "total_samples", "total_time",
    }
    assert perf["compile_time"] == 33.0 and perf["est_samples_per_sec"] == est and perf["total_samples"] == samples
    assert perf["suspected_input_bottleneck"] is bottleneck
    assert perf["samples_per_sec"] <= est and perf["programming_time"] >= 0 and perf["total_time"] >= 0
    with open(tmp_path / "performance.json") as f:
        assert json.load(f) == perf
    with csd.client() as c:
        shown = c.runs_show(run.id)
        assert shown["status"] == "CLOSED" and shown["performance"] == perf
        assert c.events_show(event_type="EventTrainingCompleted")[-1]["details"]["runId"] == run.id


def test_leaving_the_block_on_an_exception_ends_the_run_with_the_reason(csd):
    with csd.client() as c:
        with pytest.raises(ZeroDivisionError):
            with c.open_run() as run:
                1 / 0
        shown = c.runs_show(run.id)
        assert shown["status"] == "ABORTED" and "ZeroDivisionError" in shown["abortReason"]
        assert c.system_show()["runHolder"] is None
        with pytest.raises(ValueError):
            with c.open_run() as run:
                raise ValueError("bad\tbatch\nat step 3")
        assert "bad batch at step 3" in c.runs_show(run.id)["abortReason"]
        assert c.system_show()["runHolder"] is None


@pytest.mark.parametrize("flag", ["--lease-seconds", "--program-bytes-per-second"])
def test_csd_refuses_non_positive_run_settings(flag):
    r = subprocess.run([sys.executable, "-m", "csadmin.daemon", flag, "0"], capture_output=True, text=True, cwd=ROOT, timeout=30)
    assert r.returncode == 2 and "must be more than 0" in r.stderr


def test_an_admin_aborts_a_run_and_its_runtime_sees_why(csd):
    with csd.client() as c:
        run = c.open_run(owner="job-5")
        r = csd.cs("runs", "abort", run.id, "--no-confirm", "--reason", "maintenance window")
        assert r.returncode == 0, r.stderr
        assert "aborted" in r.stdout
        with pytest.raises(errors.RunAborted) as info:
            run.program(descriptor(c))
        assert "maintenance window" in info.value.message
        again = csd.cs("runs", "abort", run.id, "--no-confirm")
        assert again.returncode == 0 and "already" in again.stdout


def test_runs_list_and_show_in_text_and_json(csd):
    with csd.client() as c:
        with c.open_run(owner="job-1") as run:
            run.program(descriptor(c))
            run.stream(5)
            shown = csd.cs("system", "show")
            assert f"held by {run.id}" in shown.stdout
            holder = json.loads(csd.cs("--output-format", "json", "system", "show").stdout)["runHolder"]
            assert holder["runId"] == run.id and holder["owner"] == "job-1" and set(holder) >= {"since", "mode"}
    listed = csd.cs("runs", "list")
    assert listed.returncode == 0 and run.id in listed.stdout and "CLOSED" in listed.stdout
    data = json.loads(csd.cs("--output-format", "json", "runs", "list").stdout)
    assert data["runHolder"] is None
    assert data["runs"][0]["runId"] == run.id  # newest first
    keys = {"runId", "owner", "client", "mode", "status", "fabric", "leaseSeconds", "leaseUntil", "openedAt",
            "program", "programmingStartedAt", "programmingUntil", "totalSamples", "endedAt", "abortReason",
            "performance"}
    assert keys <= set(data["runs"][0])
    show = csd.cs("runs", "show", run.id)
    assert show.returncode == 0 and "suspected_input_bottleneck" in show.stdout and "CLOSED" in show.stdout
    assert json.loads(csd.cs("--output-format", "json", "runs", "show", run.id).stdout)["totalSamples"] == 5
    missing = csd.cs("runs", "show", "run-424242")
    assert missing.returncode == errors.EXIT_NOT_FOUND and "No run" in missing.stderr
    assert csd.cs("runs", "show").returncode == errors.EXIT_USAGE


def test_a_restart_aborts_the_open_run_and_keeps_the_history(own_csd):
    csd = own_csd
    runtime = csd.client()  # the same client (and socket) across the restart: it reconnects
    try:
        with runtime.open_run(owner="before") as closed:
            pass
        run = runtime.open_run(owner="interrupted", heartbeat=False)
        run.program(descriptor(runtime))
        csd.kill9()
        csd.start()
        with pytest.raises(errors.RunAborted, match="daemon restarted"):
            run.stream(1)
        with csd.client() as c:
            shown = c.runs_show(run.id)
            assert shown["status"] == "ABORTED" and shown["abortReason"] == "daemon restarted"
            assert shown["fabric"] == "PROGRAMMED"  # the record keeps what the run reached
            assert c.runs_show(closed.id)["status"] == "CLOSED"
            assert c.system_show()["runHolder"] is None
            with c.open_run() as after:
                assert int(after.id.split("-")[1]) == int(run.id.split("-")[1]) + 1
    finally:
        runtime.close()


def test_stream_counters_reach_the_store_within_the_flush_interval(csd):
    with csd.client() as c, c.open_run() as run:
        run.program(descriptor(c))
        run.stream(1234)
        db = os.path.join(csd.state_dir, "csd.sqlite3")

        def stored_samples():
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                row = conn.execute("SELECT body FROM runs WHERE run_id = ?", (run.id,)).fetchone()
            return json.loads(row[0])["totalSamples"] == 1234

        wait_until(stored_samples, 10, what="the stream counter to be flushed")


def _error(c, op, **args) -> dict:
    with pytest.raises(errors.CsError) as info:
        c.call(op, **args)
    return info.value


def test_bad_input_gets_coded_errors_and_csd_carries_on(csd):
    with csd.client() as c, csd.client() as other:
        assert _error(c, "run.heartbeat", run_id="run-999999").code == "NOT_FOUND"
        assert _error(c, "runs.abort", run_id="nope").code == "NOT_FOUND"
        assert _error(c, "run.open", mode="train", lease_seconds=0).code == "INVALID_ARGUMENT"
        assert _error(c, "run.open", mode="train", lease_seconds="5").code == "INVALID_ARGUMENT"
        assert _error(c, "run.open", mode="predict").code == "INVALID_ARGUMENT"
        assert _error(c, "run.open").code == "INVALID_ARGUMENT"
        run = c.open_run(owner="mine")
        err = _error(other, "run.program", run_id=run.id, program=descriptor(c))
        assert err.code == "PERMISSION_DENIED" and "another client" in err.message
        assert _error(other, "run.close", run_id=run.id).code == "PERMISSION_DENIED"
        for bad in ({"fingerprint": "x"}, descriptor(c, size_bytes="big"), descriptor(c, est_samples_per_sec=None), [1]):
            assert _error(c, "run.program", run_id=run.id, program=bad).code == "INVALID_ARGUMENT"
        run.program(descriptor(c))
        for samples in (-1, 1.5, "3", True, None):
            err = _error(c, "run.stream", run_id=run.id, samples=samples)
            assert err.code == "INVALID_ARGUMENT", samples
        assert _error(c, "run.stream", run_id=run.id).code == "INVALID_ARGUMENT"
        run.close()
        err = _error(c, "run.program", run_id=run.id, program=descriptor(c))
        assert err.code == "INVALID_STATE" and "closed" in err.message
        assert c.call("run.close", run_id=run.id)["changed"] is False  # closing twice is harmless
        aborted = c.open_run()
        c.runs_abort(aborted.id, reason="test")
        assert _error(c, "run.program", run_id=aborted.id, program=descriptor(c)).code == "RUN_ABORTED"
        assert _error(c, "run.stream", run_id=aborted.id, samples=1).code == "RUN_ABORTED"
        assert c.system_show()["state"] == "ACTIVE"  # and csd carries on


def test_the_example_train_loop_runs_against_a_real_csd(csd, tmp_path):
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "train_loop.py"), "--endpoint", csd.endpoint,
         "--batches", "5", "--batch-seconds", "0.01", "--size-bytes", "2000000", "--owner", "example",
         "--performance-dir", str(tmp_path)],
        capture_output=True, text=True, env=csd.env(), cwd=ROOT, timeout=60,
    )
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "performance.json") as f:
        perf = json.load(f)
    assert perf["total_samples"] == 5 * 256 and perf["compile_time"] == 61.5
    with csd.client() as c:
        run = c.runs_list(max_count=1)["runs"][0]
        assert run["owner"] == "example" and run["status"] == "CLOSED"
    # Compiled for another system: refused, with the exit code of a refusal.
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "train_loop.py"), "--endpoint", csd.endpoint,
         "--target-system", "CS2-0999", "--batches", "1", "--performance-dir", str(tmp_path)],
        capture_output=True, text=True, env=csd.env(), cwd=ROOT, timeout=60,
    )
    assert r.returncode == errors.EXIT_STATE and "INCOMPATIBLE_PROGRAM" in r.stderr


def test_a_runs_model_dir_is_kept_shown_and_survives_a_restart(own_csd):
    with own_csd.client() as c:
        for bad in ("", " /x", "a\nb", "x" * 4097, 5):
            err = _error(c, "run.open", mode="train", model_dir=bad)
            assert err.code == "INVALID_ARGUMENT" and "model_dir" in err.message, bad
        run = c.open_run(owner="job-7", model_dir="/data/runs/job-7")
        assert run.record["modelDir"] == "/data/runs/job-7"
        run.close()
        assert c.runs_show(run.id)["modelDir"] == "/data/runs/job-7"
    own_csd.restart()
    with own_csd.client() as c:
        assert c.runs_show(run.id)["modelDir"] == "/data/runs/job-7"
    shown = own_csd.cs("runs", "show", run.id)
    assert "Model dir" in shown.stdout and "/data/runs/job-7" in shown.stdout, shown.stdout
