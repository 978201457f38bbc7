"""Several input workers feed one run (issue #15), against a real csd: worker processes (one over
TCP with CURVE), a worker killed mid-run, a retried stream, workers refused the opener's ops,
strangers refused, the token kept secret and durable. In every test the per-worker breakdown
sums to the run's total exactly."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys

import pytest
import zmq

from csadmin import errors
from csadmin.shared import protocol
from csadmin.client import Client
from tests.harness import ROOT, wait_until

EXAMPLE = os.path.join(ROOT, "examples", "input_workers.py")
TCP = ["--tcp-endpoint", "tcp://127.0.0.1:*", "--tcp-events-endpoint", "tcp://127.0.0.1:*"]


def program_for(client: Client) -> dict:
    snap = client.system_show()
    return {"fingerprint": "sha256:workers", "target_system": snap["serial"], "execmode": snap["activeExecmode"],
            "mode": "train", "compile_time": 1.0, "est_samples_per_sec": 1e6, "size_bytes": 0}


def assert_sums(record: dict) -> None:
    """The breakdown accounts for every sample exactly once."""
    assert sum(w["samples"] for w in record["workers"]) == record["totalSamples"]
    if record["performance"]:
        assert record["performance"]["total_samples"] == record["totalSamples"]


@pytest.fixture
def opened(csd):
    """An operator's client with an open, programmed run admitting 4 workers."""
    client = Client(timeout=10, connect=csd.connection_file, key=csd.add_key("runtime", "operator"))
    run = client.open_run(mode="train", owner="job-7", workers=4, lease_seconds=30)
    run.program(program_for(client))
    yield client, run
    client.close()


def worker_client(csd, name: str, role: str = "operator") -> Client:
    return Client(timeout=10, connect=csd.connection_file, key=csd.add_key(name, role))


def tcp_endpoint(csd) -> str:
    ready = next(json.loads(line) for line in csd.log().splitlines() if '"event": "ready"' in line)
    return ready["tcp_endpoint"]


def spawn(csd, run, name: str, key: str, endpoint: str, seconds: float, delay: float = 0.01) -> subprocess.Popen:
    command = [sys.executable, EXAMPLE, "--endpoint", endpoint, f"--server-key={csd.connection()['server_key']}",  # a Z85 key may start with "-"
               "--key", key, "worker", run.id, "--name", name, "--seconds", str(seconds), "--batch-size", "7",
               "--batch-delay", str(delay)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    proc.stdin.write(run.join_token + "\n")
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush it again
    return proc


@pytest.fixture
def processes():
    """Worker processes a test starts; any still running at its end are killed (by their pid)."""
    started: list[subprocess.Popen] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_four_worker_processes_one_over_tcp_one_killed_mid_run(make_csd, processes):
    csd = make_csd(extra_args=TCP).start()
    opener = Client(timeout=10, connect=csd.connection_file, key=csd.add_key("runtime", "operator"))
    with opener:
        run = opener.open_run(mode="train", owner="job-7", workers=4, lease_seconds=2)
        run.program(program_for(opener))
        endpoints = [csd.endpoint, csd.endpoint, csd.endpoint, tcp_endpoint(csd)]  # worker-4 on "another host"
        procs = {}
        for i, endpoint in enumerate(endpoints, 1):
            seconds = 600 if i == 2 else 1.5  # worker-2 feeds until it is killed
            procs[f"worker-{i}"] = spawn(csd, run, f"worker-{i}", csd.add_key(f"w{i}", "operator"), endpoint, seconds)
            processes.append(procs[f"worker-{i}"])

        def feeding(name):
            rows = {w["name"]: w for w in run.show()["workers"]}
            return name in rows and rows[name]["samples"] > 0

        wait_until(lambda: feeding("worker-2") and feeding("worker-4"), 60, what="workers 2 and 4 to stream")
        procs["worker-2"].send_signal(signal.SIGKILL)  # mid-run: it never leaves
        procs["worker-2"].wait(timeout=10)
        for name in ("worker-1", "worker-3", "worker-4"):
            out, err = procs[name].communicate(timeout=120)
            assert procs[name].returncode == 0, err
            assert f"{name} joined {run.id}" in out
        wait_until(lambda: {w["name"]: w["status"] for w in run.show()["workers"]}["worker-2"] == "LOST", 30,
                   what="worker-2 to be reported LOST")
        assert run.record["status"] == "OPEN", "the run carries on without the lost worker"
        run.stream(5)  # the opener may feed too: it gets its own row
        run.close()
    record = run.record
    assert record["status"] == "CLOSED"
    assert_sums(record)
    rows = {w["name"]: w for w in record["workers"]}
    assert set(rows) == {"job-7", "worker-1", "worker-2", "worker-3", "worker-4"}
    assert rows["job-7"] == {**rows["job-7"], "role": "opener", "samples": 5}
    assert {n: rows[n]["status"] for n in rows if n != "job-7"} == {
        "worker-1": "LEFT", "worker-2": "LOST", "worker-3": "LEFT", "worker-4": "LEFT"}
    assert all(rows[n]["samples"] % 7 == 0 and rows[n]["samples"] > 0 for n in rows if n != "job-7")
    assert rows["worker-4"]["client"].startswith("w4/")  # its own key, over TCP
    report = record["inputReport"]
    assert report["lost"] == ["worker-2"] and report["joined"] == 4 and report["neverJoined"] == 0
    assert "worker-2 stopped calling" in report["message"]
    assert run.input_report == report
    assert round(sum(w["share"] for w in record["workers"]), 2) == 1.0


def test_the_example_names_the_slow_worker(make_csd):
    csd = make_csd(extra_args=TCP).start()
    key = csd.add_key("runtime", "operator")
    done = subprocess.run(
        [sys.executable, EXAMPLE, "--endpoint", csd.endpoint, f"--server-key={csd.connection()['server_key']}",  # a Z85 key may start with "-"
         "--key", key, "--workers", "4", "--slow", "worker-4", "--seconds", "3",
         "--worker-endpoint", f"worker-3={tcp_endpoint(csd)}", "--worker-key", f"worker-3={csd.add_key('w3', 'operator')}"],
        capture_output=True, text=True, timeout=180, env={**os.environ, "PYTHONPATH": ROOT},
    )
    assert done.returncode == 0, done.stderr
    assert "slow workers: worker-4\n" in done.stdout, done.stdout
    assert "worker-4 fed" in done.stdout and "likely input bottleneck" in done.stdout
    with csd.client() as admin:
        record = admin.runs_show("run-000001")
    assert_sums(record)
    assert record["inputReport"]["slow"] == ["worker-4"]
    assert record["performance"]["total_samples"] == sum(w["samples"] for w in record["workers"])
    assert set(record["performance"]) == {"compile_time", "est_samples_per_sec", "programming_time", "samples_per_sec",
                                          "suspected_input_bottleneck", "total_samples", "total_time"}


def test_a_retried_stream_from_a_worker_is_counted_once(csd, opened):
    client, run = opened
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.ROUTING_ID, b"worker-process-01")
    csd.secure(sock, csd.add_key("w1", "operator"))
    sock.connect(csd.endpoint)

    def send(request_id, op, **args):
        sock.send(protocol.encode({"v": 1, "id": request_id, "op": op, "args": args}))
        assert sock.poll(10_000, zmq.POLLIN), "no reply"
        return json.loads(sock.recv())

    try:
        joined = send(1, "run.join", run_id=run.id, token=run.join_token, name="raw")
        assert joined["ok"], joined
        first = send(2, "run.stream", run_id=run.id, samples=100)
        again = send(2, "run.stream", run_id=run.id, samples=100)  # the reply was lost: the same request again
        assert first == again and first["result"]["totalSamples"] == 100
        assert send(3, "run.stream", run_id=run.id, samples=1)["result"]["totalSamples"] == 101
    finally:
        sock.close(0)
        ctx.term()
    record = run.show()
    assert_sums(record)
    assert {w["name"]: w["samples"] for w in record["workers"]} == {"raw": 101}


def test_a_worker_may_not_program_close_or_abort(csd, opened):
    client, run = opened
    with worker_client(csd, "w1") as wc:
        worker = wc.join_run(run.id, run.join_token, heartbeat=False)
        assert worker.worker == "worker-1"
        worker.stream(10)
        with pytest.raises(errors.PermissionDenied) as info:
            worker.program(program_for(wc))
        assert "workers may only stream and heartbeat" in info.value.message and "job-7" in info.value.hint
        with pytest.raises(errors.PermissionDenied):
            worker.close()
        with pytest.raises(errors.PermissionDenied):
            worker.close(reason="a worker gives up")
        with pytest.raises(errors.PermissionDenied):  # runs.abort is an admin's
            wc.runs_abort(run.id)
        worker.heartbeat()
        record = worker.leave()
        assert {w["name"]: w["status"] for w in record["workers"]} == {"worker-1": "LEFT"}
        with pytest.raises(errors.InvalidState):  # a worker that left no longer feeds
            worker.stream(1)
    record = run.show()
    assert record["status"] == "OPEN" and record["fabric"] == "PROGRAMMED"
    assert_sums(record)
    assert record["totalSamples"] == 10


def test_strangers_are_refused_and_the_token_is_never_kept_in_clear(csd, opened):
    client, run = opened
    token = run.join_token
    with worker_client(csd, "stranger") as stranger:
        with pytest.raises(errors.PermissionDenied):  # a valid operator key, but it never joined
            stranger.call("run.stream", run_id=run.id, samples=5)
        with pytest.raises(errors.InvalidArgument) as info:  # no token
            stranger.call("run.join", run_id=run.id)
        assert "token" in info.value.message
        wrong = token[:-1] + ("A" if token[-1] != "A" else "B")
        with pytest.raises(errors.PermissionDenied) as info:
            stranger.join_run(run.id, wrong)
        with pytest.raises(errors.PermissionDenied) as unknown:  # the same answer for another run
            stranger.join_run("run-000099", wrong)
        assert info.value.message.replace(run.id, "X") == unknown.value.message.replace("run-000099", "X")
        with pytest.raises(errors.PermissionDenied):
            stranger.call("run.heartbeat", run_id=run.id)
    with worker_client(csd, "viewer-w", role="viewer") as viewer, pytest.raises(errors.PermissionDenied):
        viewer.join_run(run.id, token)  # the operator role is needed too
    workers = [worker_client(csd, f"w{i}") for i in range(4)]
    try:
        for w in workers:
            w.join_run(run.id, token, heartbeat=False).stream(3)
        with worker_client(csd, "fifth") as fifth, pytest.raises(errors.Busy):
            fifth.join_run(run.id, token)  # every slot is taken
    finally:
        for w in workers:
            w.close()
    record = run.show()
    assert_sums(record)
    assert record["totalSamples"] == 12
    with pytest.raises(errors.InvalidArgument):  # the opener does not join its own run
        client.join_run(run.id, token)
    # Never on the wire after run.open, in the events, the audit trail or the log.
    assert token not in json.dumps(record)
    with csd.client() as admin:
        assert token not in json.dumps(admin.events_show(max_count=1000))
        audit = admin.audit_show(max_count=1000)
    assert token not in json.dumps(audit) and wrong not in json.dumps(audit)
    assert any(a["op"] == "run.join" and "<secret>" in json.dumps(a) for a in audit)
    assert token not in csd.log() and wrong not in csd.log()


def test_the_token_survives_kill_9_like_the_run(csd, opened):
    client, run = opened
    token = run.join_token
    run.stop_heartbeats()
    csd.kill9()
    csd.start()
    with worker_client(csd, "late") as late:
        with pytest.raises(errors.RunAborted) as info:  # the right token: told why the run ended
            late.join_run(run.id, token)
        assert "daemon restarted" in info.value.message
        with pytest.raises(errors.PermissionDenied):  # a wrong one: still refused
            late.join_run(run.id, "not-the-token")
    db = sqlite3.connect(os.path.join(csd.state_dir, "csd.sqlite3"))
    try:
        stored = [json.loads(row[0]) for row in db.execute("SELECT body FROM runs")]
    finally:
        db.close()
    assert [r["joinTokenDigest"] for r in stored if r["runId"] == run.id] != [None]


def test_cs_runs_show_lists_the_workers_and_the_shell_toolbar_counts_them(csd, opened):
    from tests.csadmin.terminal import Terminal

    client, run = opened
    workers = [worker_client(csd, f"w{i}") for i in range(3)]
    term = Terminal(csd)
    try:
        fed = [w.join_run(run.id, run.join_token, heartbeat=False) for w in workers]
        for n, worker in zip((300, 300, 10), fed):
            worker.stream(n)
        shown = csd.cs("runs", "show", run.id)
        assert shown.returncode == 0, shown.stderr
        assert "Input workers: 3 of 4 joined" in shown.stdout
        lines = {line.split()[0]: line.split() for line in shown.stdout.splitlines() if line.startswith("  worker-")}
        assert lines["worker-1"][:4] == ["worker-1", "worker", "ACTIVE", "300"] and lines["worker-3"][3] == "10"
        assert "worker-3 fed 1.6% of the samples" in shown.stdout and "1 worker slot never joined" in shown.stdout
        data = json.loads(csd.cs("--output-format", "json", "runs", "show", run.id).stdout)
        assert data["inputReport"]["slow"] == ["worker-3"] and "joinToken" not in data
        assert_sums(data)
        term.wait_for(lambda t: "3 workers" in t.toolbar(), what="the toolbar to count the workers")
        assert f"fabric run {run.id} (job-7), 3 workers" in term.toolbar()
    finally:
        term.close()
        for w in workers:
            w.close()


def test_worker_slots_asked_for_when_programming(csd):
    with Client(timeout=10, connect=csd.connection_file, key=csd.add_key("runtime", "operator")) as client:
        run = client.open_run(mode="train", owner="job-8")
        assert run.join_token is None
        run.program(program_for(client), workers=1)
        assert run.join_token and run.record["workerSlots"] == 1
        with worker_client(csd, "w1") as wc, wc.join_run(run.id, run.join_token) as worker:
            worker.stream(4)
        run.stream(6)
        run.close()
    assert_sums(run.record)
    assert {w["name"]: (w["status"], w["samples"]) for w in run.record["workers"]} == {
        "job-8": ("CLOSED", 6), "worker-1": ("LEFT", 4)}
