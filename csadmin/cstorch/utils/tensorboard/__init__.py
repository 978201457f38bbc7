"""cstorch.utils.tensorboard: summaries of a run, written and read back.

    writer = cstorch.utils.tensorboard.SummaryWriter(log_dir="out/train")     # writer.py
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=100, writer=writer)
    cstorch.summarize_scalar("loss", loss)           # in the step (summary.py)
    cstorch.summarize_tensor("logits", logits)
    reader = cstorch.utils.tensorboard.SummaryReader("out/train")           # reader.py
    reader.read_scalar("loss"), reader.read_tensor("logits", step=1)

Beside them, TensorBoard's other two writers of a run: R1.8's `cstorch.scalar_summary` /
`cstorch.save_summaries` to the script's own writer (scalar_summary.py), and the run's own event
file in the model directory, its loss, rate and learning rates (run_events.py).
"""

from .reader import SummaryReader
from .summary import summarize_scalar, summarize_tensor
from .writer import SummaryWriter, TensorDescriptor

__all__ = ["SummaryReader", "SummaryWriter", "TensorDescriptor", "summarize_scalar", "summarize_tensor"]
