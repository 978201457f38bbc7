"""cstorch.optim: Cerebras-compliant optimizers and learning-rate schedulers (004).

Every optimizer here keeps its state in tensors made in `preinitialize` and updates them in place
with torch ops, so the step captured once by `cstorch.compile_step` replays to the same numbers
as torch.optim's eager step.
"""

from .adam import Adam, AdamW
from . import lr_scheduler
from .configure import configure_lr_scheduler, configure_optimizer
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "configure_optimizer", "configure_lr_scheduler", "lr_scheduler"]
