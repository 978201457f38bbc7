"""TensorBoard event files in the model directory (003: "Tensorboard event files are stored in
<model_dir>"), written with torch.utils.tensorboard's SummaryWriter.

Logged steps: the first, every LOG_EVERY_STEPS-th and the run's last. Each logs, at its step:
  loss               the step's result, when it is one floating-point number (a 0-d tensor)
  samples_per_sec    the samples executed since the previous logged step over the host time since
                     it (steps, closures, data loading: what the user waited for)
  learning_rate      each announced cstorch optimizer's learning rate now ("learning_rate" for one
                     optimizer with one param group, else "learning_rate/<optimizer>.<group>")
Read them with TensorBoard, or tensorboard's EventAccumulator.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time

import torch

from ...optim.optimizer import Optimizer

LOG_EVERY_STEPS = 10


class Summaries:
    def __init__(self, model_dir: str, backend):
        self.model_dir = model_dir
        self.backend = backend  # process_backend.Backend: its announced optimizers' learning rates are logged
        self.writer = None  # made at the first logged step (importing tensorboard takes ~0.2 s)
        self._samples = 0
        self._since = time.monotonic()

    def step_done(self, step: int, result, samples: int, last: bool) -> None:
        self._samples += samples
        if not (step == 1 or step % LOG_EVERY_STEPS == 0 or last):
            return
        # Ctrl-C waits until the writes are done: a KeyboardInterrupt inside SummaryWriter leaves
        # its queue to the writer thread half-updated, and closing it at the run's end then hangs
        # (a lost wake-up of the sleeping writer thread: close waits out flush_secs, 120 s).
        with _sigint_deferred():
            self._log(step, result)

    def _log(self, step: int, result) -> None:
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=self.model_dir)
        now = time.monotonic()
        if isinstance(result, torch.Tensor) and result.numel() == 1 and result.is_floating_point():
            self.writer.add_scalar("loss", result.item(), step)
        self.writer.add_scalar("samples_per_sec", self._samples / max(now - self._since, 1e-9), step)
        self._samples, self._since = 0, now
        optimizers = self.backend.announced(Optimizer)
        for k, optimizer in enumerate(optimizers):
            for g, group in enumerate(optimizer.param_groups):
                one = len(optimizers) == 1 and len(optimizer.param_groups) == 1
                self.writer.add_scalar("learning_rate" if one else f"learning_rate/{k}.{g}", float(group["lr"]), step)

    def close(self) -> None:
        """Flush and close the event file (the run's end)."""
        if self.writer is not None:
            self.writer.close()  # flushes every event to the file
            self.writer = None


@contextlib.contextmanager
def _sigint_deferred():
    """Hold Ctrl-C back in the body (main thread only): a SIGINT that comes meanwhile is raised
    again once the body is done, to whatever handler the process had (KeyboardInterrupt, as a
    rule).

    The handler is swapped rather than the signal masked: the kernel hands a process's SIGINT to
    any thread that does not mask it (the run's heartbeat thread, torch's), and Python then raises
    KeyboardInterrupt in the main thread all the same, so a mask on the main thread held nothing
    back. `signal.signal` raises a SIGINT already pending before it swaps, and the restore records
    one that comes up to it, so none is lost or raised in the body. A handler installed outside
    Python (getsignal None) could not be put back, so then the body runs unguarded."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield
        return
    came = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if came:
            signal.raise_signal(signal.SIGINT)  # to the main thread itself: its handler runs now
