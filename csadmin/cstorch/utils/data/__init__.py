"""cstorch.utils.data: the DataLoader that feeds a run, the DataExecutor that makes one, and which
input worker a process is.

    dataloader = cstorch.utils.data.DataLoader(input_fn, num_steps=1000, batch_size=32)
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=1000, checkpoint_steps=100)
    info = cstorch.utils.data.worker_info()     # WorkerInfo(task_id, num_tasks), for sharding
    dataset = cstorch.utils.data.SyntheticDataset({"x": torch.zeros(8)}, num_samples=100)
    tensor = cstorch.utils.data.from_numpy(array)   # and to_numpy: bfloat16 included (arrays.py)
    total = cstorch.utils.data.compute_num_steps(dataloader, num_epochs=3)   # counts.py
    dataloader.state_dict(), dataloader.load_state_dict(state)   # a RestartableDataLoader's position
    sampler = cstorch.utils.data.DistributedSampler(dataset, seed=0, batch_size=32)   # sampler.py

The input workers' machinery (processes, sockets, the trainer's pool, the launchers' roles) is
private, in _utils/, as torch keeps torch/utils/data/_utils/.
"""

from .arrays import from_numpy, to_numpy
from .utils import Schedule
from .counts import compute_num_steps, infer_batch_size
from .data_executor import DataExecutor
from .dataloader import DataLoader
from .restartable import DataLoaderCheckpoint, RestartableDataLoader
from .sampler import DistributedSampler
from .synthetic_dataset import SyntheticDataset
from .worker_info import WorkerInfo, num_tasks, task_id, worker_info

__all__ = ["DataLoader", "DataExecutor", "Schedule", "WorkerInfo", "worker_info", "task_id", "num_tasks",
           "SyntheticDataset", "from_numpy", "to_numpy", "compute_num_steps", "infer_batch_size",
           "DataLoaderCheckpoint", "RestartableDataLoader", "DistributedSampler"]
