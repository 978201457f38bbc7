"""Input workers (num_workers_per_csx > 1) feeding a run on a real csd: real worker processes,
the CURVE socket to the trainer, csd's per-worker counts and report."""

from __future__ import annotations

import os
import signal
import time

import pytest
import torch

import csadmin.cstorch as cstorch
from csadmin import errors
from csadmin.cstorch.utils.data._utils.worker import PREFETCH
from tests.cstorch.helpers import Trainer, configure, model

FEATURES = 8


def id_batches(batch_size: int, n: int, delay_for: dict | None = None, kill_after: dict | None = None,
               raise_in: int | None = None, odd_size_in: int | None = None):
    """input_fn: this worker's shard of samples 0 … n-1 (sample k goes to worker k % N), the
    sample's id in feature 7; optional per-worker slowness, self-kill, exception, odd batch size."""
    info = cstorch.utils.data.worker_info()
    if raise_in == info.task_id:
        raise ValueError(f"bad shard {info.task_id}")
    ids = torch.arange(n)[info.task_id::info.num_tasks]
    size = 3 if odd_size_in == info.task_id else batch_size
    batches = []
    for start in range(0, len(ids) - size + 1, size):
        chunk = ids[start:start + size]
        x = torch.randn(size, FEATURES)
        x[:, 7] = chunk.float()
        batches.append((x, (x[:, 0] > 0).long()))

    def shard():
        for k, batch in enumerate(batches):
            if kill_after and kill_after.get(info.task_id) == k:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep((delay_for or {}).get(info.task_id, 0.0))
            yield batch

    class Shard:
        def __iter__(self):
            return shard()

        def __len__(self):
            return len(batches)

    return Shard()


def workers_of(daemon, run_id: str) -> dict:
    with daemon.client() as c:
        record = c.runs_show(run_id)
    return record, {row["name"]: row for row in record["workers"]}


def test_four_workers_count_every_sample_once_and_the_slow_one_is_named(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=4)
    t = Trainer(model())
    # worker-3 takes 4 s a batch: at most its 4 prefetched batches and one per 4 s more, under half
    # its fair share of 120 steps (15 batches) even when a loaded machine (4 test workers on 2
    # cores) makes a step 300 ms; at 1 s a batch, 90 ms steps were enough to hide it
    steps, batch_size = 120, 4
    loader = cstorch.utils.data.DataLoader(id_batches, num_steps=steps, batch_size=batch_size, n=4 * steps * batch_size,
                                           delay_for={3: 4.0})
    assert len(loader) == steps
    seen = []
    for x, y in loader:
        seen += x[:, 7].long().tolist()
        t.step(x, y)
    assert len(seen) == steps * batch_size and len(set(seen)) == len(seen)  # disjoint shards, no repeats
    by_worker = [sum(1 for i in seen if i % 4 == task) for task in range(4)]
    assert loader._pool.fed == by_worker
    run_id = _newest_run(ws_csd)
    record, rows = workers_of(ws_csd, run_id)
    assert record["status"] == "CLOSED" and record["performance"]["total_samples"] == steps * batch_size
    for task in range(4):
        row, bye = rows[f"worker-{task}"], loader._pool.byes[task]
        assert row["samples"] == by_worker[task] == bye["consumed"] == bye["streamed"]
        assert row["status"] == "LEFT"
        assert 0 <= bye["produced"] * batch_size - bye["consumed"] <= PREFETCH * batch_size
    assert record["inputReport"]["slow"] == ["worker-3"]
    assert "worker-3 fed" in record["inputReport"]["message"]
    shown = ws_csd.cs("runs", "show", run_id).stdout
    assert "Input report: worker-3 fed" in shown and "likely input bottleneck" in shown, shown
    assert all(not p.is_alive() for p in loader._pool.processes)


def _newest_run(daemon) -> str:
    with daemon.client() as c:
        return c.runs_list()["runs"][0]["runId"]


def test_a_killed_worker_ends_the_run_with_a_clear_error(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=4)
    t = Trainer(model())
    # Worker 2 dies when it makes its 6th batch, which is once two of its batches were taken. On a
    # loaded machine it may be scheduled late and the other three feed the steps meanwhile (the pool
    # does not wait for a slow worker), so the run is long enough never to end before that: the
    # loop ends at the death, whenever it comes (it ended after 60 steps without it at load 12).
    loader = cstorch.utils.data.DataLoader(id_batches, num_steps=100_000, batch_size=4, n=4 * 60 * 4,
                                           kill_after={2: 5})
    with pytest.raises(errors.InputWorkerFailed, match=r"input worker 2 \(pid \d+\) was killed by signal SIGKILL") as exc:
        for x, y in loader:
            t.step(x, y)
    assert "The run was ended." in exc.value.message
    record, _ = workers_of(ws_csd, _newest_run(ws_csd))
    assert record["status"] == "ABORTED" and "input worker 2" in record["abortReason"]
    assert all(not p.is_alive() for p in loader._pool.processes)
    with pytest.raises(errors.InvalidState, match="run has ended"):
        t.step(x, y)


def test_a_worker_exception_reaches_the_trainer_with_its_traceback(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    t = Trainer(model())
    loader = cstorch.utils.data.DataLoader(id_batches, num_steps=10, batch_size=4, n=200, raise_in=1)
    with pytest.raises(errors.InputWorkerFailed) as exc:
        for x, y in loader:
            t.step(x, y)
    text = exc.value.message
    assert text.startswith("input worker 1 raised:\nTraceback (most recent call last):")
    assert "test_workers.py" in text and "ValueError: bad shard 1" in text


def test_a_batch_of_another_size_from_a_worker_is_refused_before_the_step(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    t = Trainer(model())
    loader = cstorch.utils.data.DataLoader(id_batches, num_steps=10, batch_size=4, n=200, odd_size_in=1)
    steps = 0
    # which worker's batch comes first depends on which was ready (the skip rule): either way
    # batch 2 is the other size, and it never reaches the step
    pattern = r"Inconsistent batch sizes detected: batch 2 has size (3, the first batch had 4|4, the first batch had 3)"
    with pytest.raises(errors.ReprogramForbidden, match=pattern) as exc:
        for x, y in loader:
            t.step(x, y)
            steps += 1
    assert steps == 1 and "drop_last=True" in exc.value.hint
    assert all(not p.is_alive() for p in loader._pool.processes)


def test_workers_need_the_step_count(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    with pytest.raises(errors.InvalidArgument, match="with num_workers_per_csx=2, give num_steps"):
        cstorch.utils.data.DataLoader(id_batches, batch_size=4, n=200)


def _children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.add(int(entry))
    return out


def test_ctrl_c_ends_the_run_and_its_workers(ws_csd, tmp_path):
    """Ctrl-C at a terminal: SIGINT to the whole process group, trainer and workers alike."""
    import subprocess
    import sys

    from tests.cstorch.examples.test_train_eval import TRAIN
    from tests.harness import ROOT, wait_until

    def newest_run():
        with ws_csd.client() as c:
            runs = c.runs_list()["runs"]
        return runs[0] if runs else {"runId": None}

    before = newest_run()["runId"]
    proc = subprocess.Popen([sys.executable, TRAIN, "--model-dir", str(tmp_path / "m"), "--num-steps", "100000",
                             "--workers", "2"], env=ws_csd.env(), cwd=ROOT, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def feeding():
            run = newest_run()
            return run["runId"] != before and run["status"] == "OPEN" and len(run["workers"]) == 2 and run
        run = wait_until(feeding, timeout=60)
        workers = _children(proc.pid)
        assert len(workers) == 2
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert "InputWorkerFailed" not in err
    with ws_csd.client() as c:
        record = c.runs_show(run["runId"])
    assert record["status"] == "ABORTED" and record["abortReason"] == "runtime interrupted (Ctrl-C)"
    assert sum(w["samples"] for w in record["workers"]) == record["totalSamples"]
    wait_until(lambda: not any(os.path.exists(f"/proc/{pid}") and open(f"/proc/{pid}/stat").read().split()[2] != "Z"
                                for pid in workers), timeout=30)


def test_a_stranger_on_the_workers_socket_is_ignored(ws_csd, tmp_path):
    """Someone who learnt the endpoint and the server key but not the run's hello secret: its
    hello, batches and errors change nothing. Without the server key it cannot even connect."""
    import zmq

    from csadmin.cstorch.utils.data._utils.transport import encode, pack_batch

    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    t = Trainer(model())
    steps = 20
    loader = cstorch.utils.data.DataLoader(id_batches, num_steps=steps, batch_size=4, n=400)
    context = zmq.Context()
    stranger = context.socket(zmq.DEALER)
    stranger.linger = 0
    seen = []
    try:
        for i, (x, y) in enumerate(loader):
            if i == 0:
                public, secret = zmq.curve_keypair()
                stranger.curve_serverkey, stranger.curve_publickey, stranger.curve_secretkey = (
                    loader._pool.socket.server_public, public, secret)
                stranger.connect(loader._pool.socket.endpoint)
                stranger.send_multipart(encode("hello", {"task": 0, "secret": "guess", "pid": 1}))
                stranger.send_multipart(encode("batch", {"seq": 0, "samples": 4}, pack_batch((x * 0 - 1, y))))
                stranger.send_multipart(encode("error", {"traceback": "forged"}))
                stranger.send_multipart([b"\xff", b"not json"])
            seen += x[:, 7].long().tolist()
            t.step(x, y)
    finally:
        stranger.close()
        context.term()
    assert len(seen) == steps * 4 and min(seen) >= 0 and len(set(seen)) == len(seen)
    _, rows = workers_of(ws_csd, _newest_run(ws_csd))
    assert sum(row["samples"] for row in rows.values()) == steps * 4


def test_a_run_aborted_on_csd_raises_run_aborted_not_a_worker_failure(ws_csd, tmp_path):
    configure(ws_csd, tmp_path, num_workers_per_csx=2)
    t = Trainer(model())
    loader = cstorch.utils.data.DataLoader(id_batches, num_steps=100000, batch_size=4, n=4000)
    with pytest.raises(errors.RunAborted, match="wafer maintenance"):
        for i, (x, y) in enumerate(loader):
            t.step(x, y)
            if i == 5:
                with ws_csd.client() as c:
                    c.runs_abort(_newest_run(ws_csd), reason="wafer maintenance")
    record, _ = workers_of(ws_csd, _newest_run(ws_csd))
    assert record["status"] == "ABORTED"
    assert all(not p.is_alive() for p in loader._pool.processes)  # the failed loop stopped them
