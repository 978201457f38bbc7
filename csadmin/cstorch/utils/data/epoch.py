"""One iteration of an R1.8 DataLoader (one epoch, `for batch in dataloader:`): its position, how
many batches it still feeds, and the batches it drew that no step consumed.

    epoch = Epoch(loader, run, batches, count, final, leftover)   # what DataLoader.__iter__ returns

A batch drawn and never stepped on before the iteration is abandoned (a script's
`next(iter(dataloader))` before its loop) is **unfed** (`unfed()`). The in-process input starts
each iteration with a fresh pass, so it is simply not counted. Input workers' stream continues
instead, and a batch they hand over is streamed into the run by them (csd counts it): so the next
iteration hands the unfed batches out first (`leftover`), and the run sees — and csd counts —
the batches of a script that inspected nothing.
"""

from __future__ import annotations


class Epoch:
    """Iterates `count` batches (None: until `batches` ends): `leftover` first, as they were, then
    `batches`, each counted by the loader (`loader._took`)."""

    def __init__(self, loader, run, batches, count: int | None, final: bool, leftover: list):
        self._loader, self._run = loader, run
        self._batches, self._leftover = batches, list(leftover)
        self._remaining = self._count = count
        self._final = final  # its batches are the step plan's last: the input workers leave after them
        self._done = False
        self._since_step: list = []  # the batches drawn since the run last stepped
        self._step_seen = run.step

    def __iter__(self) -> "Epoch":
        return self

    def unfed(self) -> list:
        """The batches this iteration drew that no step consumed, if it was left before its end."""
        return [] if self._done or self._run.step != self._step_seen else self._since_step

    def __next__(self):
        loader = self._loader
        if self._remaining is not None and self._remaining <= 0:
            if not self._done:
                self._done = True
                loader._completed += self._count
                if self._final:
                    loader._ended()
            raise StopIteration
        try:
            if self._leftover:
                batch = self._leftover.pop(0)  # checked and counted when it was first drawn
            else:
                batch = next(self._batches)
                loader._took(batch)
        except StopIteration:
            raise
        except BaseException:
            if loader._pool is not None:
                loader._pool.shutdown()  # a refused batch, a failed worker, Ctrl-C: the workers end now
            raise
        if self._run.step != self._step_seen:
            self._since_step, self._step_seen = [], self._run.step
        self._since_step.append(batch)
        if self._remaining is not None:
            self._remaining -= 1
        return batch
