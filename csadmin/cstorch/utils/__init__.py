"""cstorch.utils: the DataLoader and DataExecutor that feed a run (cstorch.utils.data), TensorBoard
summaries (cstorch.utils.tensorboard), samples-per-second tracking (tracker), and the 2.0–2.1
name of the cluster config (`CSConfig`, cstorch.distributed.ClusterConfig)."""

from . import data, tensorboard, tracker
from ..distributed import ClusterConfig as CSConfig

__all__ = ["data", "tensorboard", "tracker", "CSConfig"]
