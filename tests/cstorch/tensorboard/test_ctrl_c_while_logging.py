"""Ctrl-C while a step's summaries are written waits until they are: a KeyboardInterrupt inside
SummaryWriter leaves its queue to the writer thread half-updated (a wake-up lost: closing the
writer at the process's end then waits out its flush_secs, 120 s, as the run's Ctrl-C test did
now and then; or a Condition released twice, which kills the writer thread). The process has
other threads (the run's heartbeat thread, torch's), and the kernel hands a process's SIGINT to
any of them: here it is sent to one on purpose, the case a signal mask on the main thread did
not hold back."""

import select
import signal
import socket
import threading

import pytest
import torch

from csadmin.cstorch.utils.tensorboard import run_events
from csadmin.cstorch.utils.tensorboard.reader import SummaryReader
from tests.harness import wait_until


@pytest.fixture
def other_thread():
    """A thread of the process other than the main one, as the run's heartbeat thread is."""
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait, name="heartbeat-like", daemon=True)
    thread.start()
    yield thread
    stop.set()
    thread.join()


def sigint_through(thread: threading.Thread) -> None:
    """Deliver SIGINT to `thread` and return once Python's C-level handler has run (it writes the
    wakeup fd): the main thread then runs the Python handler at its next check, in the caller."""
    assert threading.current_thread() is threading.main_thread()
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    previous = signal.set_wakeup_fd(ours.fileno(), warn_on_full_buffer=False)
    try:
        signal.pthread_kill(thread.ident, signal.SIGINT)
        assert select.select([theirs], [], [], 10.0)[0], "SIGINT was not handled within 10 s"
    finally:
        signal.set_wakeup_fd(previous)
        ours.close()
        theirs.close()


def test_a_sigint_handled_by_another_thread_is_raised_after_the_body(other_thread):
    done = []
    with pytest.raises(KeyboardInterrupt):
        with run_events._sigint_deferred():
            sigint_through(other_thread)
            done.append(sum(int(x) for x in "123"))  # Python calls: where a pending handler runs
    assert done == [6]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is the process's again


def test_without_a_sigint_the_body_runs_and_nothing_is_raised():
    with run_events._sigint_deferred():
        pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


class Backend:
    """What Summaries reads of the process's backend: its announced optimizers (none here)."""

    def announced(self, cls):
        return []


def test_ctrl_c_while_a_scalar_is_queued_lets_the_writer_close(tmp_path, other_thread):
    summaries = run_events.Summaries(str(tmp_path), Backend())
    summaries.step_done(1, torch.tensor(0.25), samples=16, last=False)  # the writer and its thread exist
    queue = summaries.writer.file_writer.event_writer._async_writer._byte_queue
    # The writer thread asleep in queue.get(timeout=flush_secs, 120 s), as it is between logged steps.
    wait_until(lambda: not queue.unfinished_tasks and queue.not_empty._waiters, what="the writer thread to wait")
    notify = queue.not_empty.notify

    def notify_interrupted(n=1):  # Queue.put waking the writer thread: Ctrl-C then lost the wake-up
        del queue.not_empty.notify
        sigint_through(other_thread)
        notify(n)

    queue.not_empty.notify = notify_interrupted
    with pytest.raises(KeyboardInterrupt):
        summaries.step_done(10, torch.tensor(0.5), samples=16, last=False)
    assert "notify" not in vars(queue.not_empty)  # the signal came in the window
    closer = threading.Thread(target=summaries.close, daemon=True)
    closer.start()
    closer.join(timeout=10.0)
    assert not closer.is_alive(), "the event file's close blocked (its queue.join waits on the sleeping writer)"
    reader = SummaryReader(str(tmp_path))
    assert [(e.step, e.value) for e in reader.read_scalar("loss")] == [(1, 0.25), (10, 0.5)]
    assert [e.step for e in reader.read_scalar("samples_per_sec")] == [1, 10]
