"""cstorch.utils: the DataLoader and DataExecutor that feed a run (cstorch.utils.data), TensorBoard
summaries (cstorch.utils.tensorboard), samples-per-second tracking (tracker), walks over nested
structures (nest, which ModelZoo reads as `cstorch.utils.nest` without importing it), and the
2.0–2.1 name of the cluster config (`CSConfig`, cstorch.distributed.ClusterConfig)."""

from . import benchmark, data, nest, tensorboard, tracker
from ..distributed import ClusterConfig as CSConfig

__all__ = ["data", "nest", "tensorboard", "tracker", "CSConfig"]
