"""csadmin.cstorch: the Cerebras PyTorch API (cstorch) run for real on the CPU against csd.

    import csadmin.cstorch as cstorch

    cstorch.configure(model_dir="out", checkpoint_steps=100)     # csd from $CS_CONNECT / $CS_KEY
    compiled_model = cstorch.compile(model, backend="wse_ws")    # checks the system now

    @cstorch.compile_step                # the first call captures, compiles, programs; then replays
    def training_step(inputs, targets): ...

    @cstorch.step_closure                # reads tensors' values, after the step
    def post_training_step(loss): print(loss.item())

    cstorch.scalar_summary("loss", loss)                         # TensorBoard scalars of the step,
    cstorch.save_summaries(writer, global_step)                  # written to the script's writer

The later releases' names are the same runtime: `backend` fills what `configure` fills, `trace`
is `compile_step`, `utils.data.DataExecutor` makes each run (several per process, in turn),
`checkpoint_closure` runs on its checkpoint steps. The later releases' top-level helpers are here
too: `use_cs()`, `current_torch_device()`, `current_backend_impl()`, `get_backend_args(type)`,
`Backend`/`BackendType`, the one-value tensor factories (`full`, `ones`, `zeros`, their `_like`s),
`from_numpy`/`to_numpy`, `SyntheticDataset`, `DataLoader`, the `saver` module,
`summarize_tensor` beside `summarize_scalar`, `current_executor()`, `make_constant`, the debug
names (`name_scope`, `set_debug_scope`, `add_debug_name`, `get_debug_name`), the precision
optimization level's `pol()` / `current_pol()`, and `__version__`,
the release whose API this is (2.10.0: ModelZoo checks checkpoints' versions against it).

    backend = cstorch.backend("CSX", artifact_dir="out")          # or "CPU", "GPU": no system
    with backend.device:
        model = Net()
    compiled_model = cstorch.compile(model, backend)
    executor = cstorch.utils.data.DataExecutor(dataloader, num_steps=100, checkpoint_steps=50)
    for batch in executor:
        loss = training_step(batch)      # @cstorch.trace

Needs the optional extra `csadmin[cstorch]` (torch, h5py); `cs`, `csd` and `csadmin.client` never
import it. docs/cstorch.md lists every name of the API with its status here.
"""

from . import amp, backends, distributed, experimental, lib, metrics, nn, optim, saver, sparse, utils
from .backend import (backend, current_backend, current_backend_impl, current_torch_device, get_backend_args,
                          use_cs)
from .backend.backend_type import BackendType
from .storage.checkpoint import load, save
from .utils.step_closures import checkpoint_closure, step_closure
from .core.compile import compile
from .backend.config import configure
from .distributed import get_worker_state
from .utils.tensorboard.scalar_summary import save_summaries, scalar_summary
from .backend.process_backend import Backend
from .core.trace import compile_step, trace
from .utils.tensor import full, full_like, ones, ones_like, zeros, zeros_like
from .utils.data import DataLoader, DataLoaderCheckpoint, RestartableDataLoader, SyntheticDataset, from_numpy, to_numpy
from .utils.tensorboard import summarize_scalar, summarize_tensor
from .utils.constant import make_constant
from .utils.data.data_executor import current_executor
from .core.name_scope import add_debug_name, get_debug_name, name_scope, set_debug_scope
from ._version import __version__, _generating_docs
from .utils.pol import current_pol, pol

__all__ = ["configure", "compile", "compile_step", "step_closure", "scalar_summary", "save_summaries", "save", "load",
           "optim", "amp", "metrics", "utils", "backend", "current_backend", "trace", "checkpoint_closure",
           "summarize_scalar", "summarize_tensor", "distributed", "backends", "saver", "Backend", "BackendType",
           "use_cs", "current_torch_device", "current_backend_impl", "get_backend_args", "full", "full_like", "ones",
           "ones_like", "zeros", "zeros_like", "from_numpy", "to_numpy", "SyntheticDataset", "DataLoader",
           "DataLoaderCheckpoint", "RestartableDataLoader", "get_worker_state", "current_executor", "make_constant",
           "name_scope", "set_debug_scope", "add_debug_name", "get_debug_name", "sparse", "experimental", "pol", "current_pol", "nn", "lib"]
