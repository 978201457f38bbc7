"""The training step of the launcher tests' scripts (tests/launch/slow_input.py,
tests/slurm/sharded_input.py): 004's, compiled — forward, loss, backward, update."""

import csadmin.cstorch as cstorch


def training_step(compiled, loss_fn, optimizer):
    """`step(batch)` for `batch` = (inputs, targets); returns the loss."""

    @cstorch.compile_step
    def step(batch):
        inputs, targets = batch
        loss = loss_fn(compiled(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return step
