"""cstorch.optim: Cerebras-compliant optimizers and learning-rate schedulers (004).

Every optimizer here keeps its state in tensors made in `preinitialize` and updates them in place
with torch ops, so the step captured once by `cstorch.compile_step` replays to the same numbers
as its eager step (and, where torch.optim has the same algorithm, as torch.optim's). The classes
are the real package's, grouped by family: sgd (SGD, ASGD), adam (Adam, AdamW), adam_variants
(Adamax, NAdam, RAdam), adaptive (Adagrad, Adadelta, RMSprop), sign (Lion, Rprop) and scaled
(Lamb, Adafactor). Their hyperparameters are scheduled by `scheduler` (the generic schedules),
`lr_scheduler` (the learning rate's) and `weight_decay_scheduler` (the weight decay's).
"""

from .adam import Adam, AdamW
from .adam_variants import Adamax, NAdam, RAdam
from .adaptive import Adadelta, Adagrad, RMSprop
from . import lr_scheduler, scheduler, weight_decay_scheduler
from .configure import configure_lr_scheduler, configure_optimizer
from .optimizer import Optimizer
from .scaled import Adafactor, Lamb
from .sgd import ASGD, SGD
from .sign import Lion, Rprop

__all__ = ["Optimizer", "Adadelta", "Adafactor", "Adagrad", "Adamax", "Adam", "AdamW", "ASGD", "Lamb", "Lion",
           "NAdam", "RAdam", "RMSprop", "Rprop", "SGD", "configure_optimizer", "configure_lr_scheduler",
           "lr_scheduler", "scheduler", "weight_decay_scheduler"]
