"""The model directory as 003 lists it, beyond performance.json (backend/csd_link.py) and the checkpoints
(the script's `cstorch.save`):

    <model_dir>/cs_<checksum>            the compile directory: a link to compile_dir/cs_<checksum>
                                         (the captured program, compile.log, program.json with the
                                         estimate); the directory itself when compile_dir is model_dir
    <model_dir>/<mode>/params_<mode>.yaml  the run's yaml: the configure arguments, the run and its
                                         program, the models, optimizers, schedules and DataLoaders
    <model_dir>/events.out.tfevents.*    TensorBoard scalars (utils/tensorboard/run_events.py)

`write_params` writes the yaml atomically (csadmin/shared/atomic_write.py) with yaml.safe_dump, so
yaml.safe_load gives back exactly the dict `run_params` built.
"""

from __future__ import annotations

import os

import yaml

from csadmin.shared.atomic_write import write_atomically

from ..backend.config import PARAMETERS
from ..optim.lr_scheduler.base import LRScheduler
from ..optim.scheduler.base import Scheduler
from ..optim.optimizer import Optimizer
from .program import Program
from ..utils.data import DataLoader


def link_compile_dir(model_dir: str, program: Program) -> str:
    """`<model_dir>/cs_<checksum>` → the program's compile directory (replaced atomically)."""
    name = os.path.basename(program.directory)
    link = os.path.join(model_dir, name)
    if os.path.realpath(program.directory) == os.path.realpath(link):
        return link  # compile_dir is model_dir: the directory itself is there
    tmp = f"{link}.tmp-{os.getpid()}"
    if os.path.lexists(tmp):
        os.unlink(tmp)
    os.symlink(os.path.abspath(program.directory), tmp)
    os.replace(tmp, link)
    return link


def _params_path(model_dir: str, mode: str) -> str:
    return os.path.join(model_dir, mode, f"params_{mode}.yaml")


def run_params(backend, program: Program, run: dict) -> dict:
    """The yaml's content (plain values only: it round-trips through yaml.safe_dump/safe_load):
    the process backend's (process_backend.Backend) configuration, models and announced library objects."""
    config = backend.config
    runconfig = {}
    for name in PARAMETERS:
        value = getattr(config, name)
        if name != "key":  # a key file's path says nothing about the run
            runconfig[name] = list(value) if isinstance(value, tuple) else value
    schedulers = backend.announced(Scheduler)
    inner = {id(part) for s in schedulers for part in s.parts()}
    outer = [s for s in schedulers if id(s) not in inner]
    lr = [s.settings() for s in outer if isinstance(s, LRScheduler)]
    others = [{**s.settings(), "param_group_key": s.param_group_key} for s in outer if not isinstance(s, LRScheduler)]
    return {
        "runconfig": runconfig,
        "run": {**run, "mode": program.mode, "execmode": program.execmode, "step": program.name,
                "compile_checksum": program.checksum[:16], "fingerprint": f"sha256:{program.checksum}",
                "compile_dir": os.path.abspath(program.directory) if program.directory else None,
                "batch_size": program.batch_size},
        "model": [_model(m.model) for m in backend.models],
        "optimizer": [o.settings() for o in backend.announced(Optimizer)],
        "lr_scheduler": lr,
        **({"schedulers": others} if others else {}),  # the weight decay's and other keys' schedules
        f"{program.mode}_input": [d.settings() for d in backend.announced(DataLoader)],
    }


def _model(module) -> dict:
    """A model's class, size and layers (each leaf module as PyTorch prints it: its settings)."""
    leaves = {name: repr(m) for name, m in module.named_modules() if name and not list(m.children())}
    return {"class": type(module).__name__, "parameters": sum(p.numel() for p in module.parameters()),
            "layers": leaves}


def write_params(backend, program: Program, run: dict) -> str:
    """The run's yaml, in the run's directory (a DataExecutor's own, else the model directory)."""
    path = _params_path(backend.run_dir(), program.mode)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_atomically(path, yaml.safe_dump(run_params(backend, program, run), sort_keys=False))
    return path
