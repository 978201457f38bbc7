"""`cstorch.configure`: the run's settings, once per process (004, "Configuring a run").

Every parameter of the document's table, with its default, plus where csd is (`mgmt_address`: a
connection file or an endpoint; default `$CS_CONNECT`) and this client's secret key file (`key`;
default `$CS_KEY`). A value the simulated system cannot honour (more than one CS-2 for one csd)
is refused, never ignored.

R1.8's runner passes more: `seed` seeds torch now (configure comes before the model is built, so
its initial weights follow the seed); `job_time_sec` is the run's time limit, kept on the Config
for csd's run.open; `debug_args`, `credentials_path`, `execution_strategy` and
`disable_version_check` configure the real system's appliance client, which this model has not:
they are validated, recorded in the run's yaml, and one line on stderr says they change nothing
(NO_EFFECT). `execution_strategy` must still agree with the compile backend (core/compile.py).
"""

from __future__ import annotations

import numbers
import os
import sys
from dataclasses import dataclass, field, fields

import torch

from csadmin.shared import rendezvous
from csadmin.errors import InvalidArgument, InvalidState

from . import process_backend
from .appliance import DebugArgs, ExecutionStrategy

# 004's note under the table: why configure runs once per process.
ONCE_RULE = (
    "multiple CS runs in a single process are not supported: configure can only be called once and "
    "applies globally"
)
ONCE_NEXT = "Any runs with different configurations must be run in separate processes."


@dataclass(frozen=True)
class Config:
    model_dir: str = "./"
    compile_dir: str = "/opt/cerebras/cached_compile"
    compile_only: bool = False
    validate_only: bool = False
    checkpoint_steps: int = 0
    num_csx: int = 1
    max_wgt_servers: int = 24
    mount_dirs: tuple = ()
    python_paths: tuple = ()
    transfer_processes: int = 5
    num_workers_per_csx: int = 1
    job_labels: tuple = ()
    max_act_per_csx: int = 1
    mgmt_address: str | None = None
    key: str | None = None
    seed: int | None = None  # torch was seeded with it by configure
    job_time_sec: int | None = None  # the run's time limit in seconds (csd aborts the run past it)
    debug_args: dict | None = None  # DebugArgs.settings(): recorded, no effect here
    credentials_path: str | None = None  # the appliance's TLS certificate: recorded, no effect here
    execution_strategy: str | None = None  # ExecutionStrategy's execution mode name ("WEIGHT_STREAMING")
    disable_version_check: bool = False  # the appliance's version check: recorded, no effect here
    labels: dict = field(default_factory=dict)  # job_labels parsed
    workers_rendezvous: str | None = None  # csrun_wse's directory: the input workers are Slurm tasks

    @property
    def fed_by_workers(self) -> bool:
        """Input workers feed the run (and stream its samples): forked ones, or Slurm tasks."""
        return self.num_workers_per_csx > 1 or self.workers_rendezvous is not None


PARAMETERS = tuple(f.name for f in fields(Config) if f.name not in ("labels", "workers_rendezvous"))

# The appliance client's settings: accepted and recorded; one line says they change nothing here.
NO_EFFECT = ("debug_args", "credentials_path", "execution_strategy", "disable_version_check")

def _bad(name: str, value, want: str, hint: str = "") -> InvalidArgument:
    text = repr(value)
    text = text if len(text) <= 60 else text[:59] + "…"
    return InvalidArgument(f"configure: {name} must be {want}, not {text}.", hint or f"Pass a valid {name}.")


def _int(name: str, value, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise _bad(name, value, f"an integer ≥ {least}")
    return value


def _bool(name: str, value) -> bool:
    if not isinstance(value, bool):
        raise _bad(name, value, "True or False")
    return value


def _path(name: str, value) -> str:
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip() or "\0" in str(value):
        raise _bad(name, value, "a directory path")
    return os.fspath(value)


def _paths(name: str, value, must_exist: bool) -> tuple:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise _bad(name, value, "a list of directory paths")
    out = tuple(_path(name, v) for v in value)
    for p in out if must_exist else ():
        if not os.path.isdir(p):
            raise InvalidArgument(f"configure: {name} entry {p!r} is not a directory on this node.",
                                  f"Create it or remove it from {name}.")
    return out


def _writable_dir(name: str, path: str) -> str:
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise InvalidArgument(f"configure: {name} {path!r} cannot be created: {exc.strerror}.",
                              f"Pass a directory you can write to as {name}=...") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InvalidArgument(f"configure: {name} {path!r} is not writable.",
                              f"Pass a directory you can write to as {name}=...")
    return path


def _optional_int(name: str, value, least: int, most: int | None = None, want: str = "") -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < least \
            or (most is not None and value > most):
        raise _bad(name, value, want or f"None or an integer ≥ {least}")
    return int(value)


def _file(name: str, value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip() or "\0" in str(value):
        raise _bad(name, value, "None or a file path")
    return os.fspath(value)


def _debug_args(value) -> dict | None:
    if value is None:
        return None
    if not isinstance(value, DebugArgs):
        raise _bad("debug_args", value, "None or a DebugArgs",
                   "Pass get_debug_args(path) (cerebras_appliance.run_utils; csadmin.cstorch.backend.appliance).")
    return value.settings()


def _strategy(value) -> str | None:
    if value is None:
        return None
    if not isinstance(value, ExecutionStrategy):
        raise _bad("execution_strategy", value, "None or an ExecutionStrategy",
                   f"Pass one of {', '.join('ExecutionStrategy.' + e.name for e in ExecutionStrategy)}.")
    return value.value


def _labels(value) -> tuple[tuple, dict]:
    if value is None:
        return (), {}
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise _bad("job_labels", value, "a list of 'key=value' strings")
    parsed = {}
    for item in value:
        key, sep, val = item.partition("=") if isinstance(item, str) else ("", "", "")
        if not sep or not key.strip() or not val.strip() or any(not c.isprintable() for c in item):
            raise _bad("job_labels", item, "'key=value' (an equal-sign-separated pair)")
        parsed[key.strip()] = val.strip()
    return tuple(value), parsed


# `csrun_cpu … --mode validate_only|compile_only` (csadmin/launch) sets this: the launcher's
# mode wins over the script's own compile_only / validate_only.
MODE_ENV = "CSTORCH_MODE"
LAUNCHER_MODES = ("validate_only", "compile_only", "train", "eval")


def _launcher_mode(compile_only: bool, validate_only: bool) -> tuple[bool, bool]:
    mode = os.environ.get(MODE_ENV)
    if not mode:
        return compile_only, validate_only
    if mode not in LAUNCHER_MODES:
        raise InvalidArgument(f"configure: ${MODE_ENV} must be one of {', '.join(LAUNCHER_MODES)}, not {mode!r}.",
                              f"Unset {MODE_ENV}, or launch with csrun_cpu --mode validate_only|compile_only.")
    if mode in ("train", "eval"):
        return False, False
    return mode == "compile_only", mode == "validate_only"


def _launcher_workers(workers: int) -> tuple[int, str | None]:
    """csrun_wse with worker nodes: the job's input worker tasks are num_workers_per_csx (the
    script's own value is replaced), and where they meet the trainer (csadmin/shared/rendezvous.py)."""
    directory = os.environ.get(rendezvous.DIR_ENV)
    if not directory:
        return workers, None
    try:
        return rendezvous.read_layout(directory).workers, directory
    except ValueError as exc:
        raise InvalidState(f"configure: ${rendezvous.DIR_ENV}: {exc}.",
                           f"Unset {rendezvous.DIR_ENV}, or launch the script with csrun_wse.") from None


def configure(**kwargs) -> Config:
    """Configure this process's run (once): the backend's configuration. A parameter passed as
    None takes its default (R1.8's runner passes `runconfig.get(...)` for what its yaml may leave
    out). Raises InvalidArgument for an unknown parameter or a bad value, InvalidState when called
    a second time."""
    backend = process_backend.current()
    _known(kwargs)
    if backend.config is not None:
        raise InvalidState(f"cstorch.configure was already called in this process: {ONCE_RULE}.", ONCE_NEXT)
    config = settings(**kwargs)
    # python_paths: this process and its input workers (forked from it) import from them too.
    sys.path.extend(p for p in config.python_paths if p not in sys.path)
    if config.seed is not None:
        torch.manual_seed(config.seed)  # before the model is built: its initial weights follow the seed
    given = [name for name in NO_EFFECT if kwargs.get(name) is not None]
    if given:
        verb = "it changes" if len(given) == 1 else "they change"
        print(f"cstorch: configure: {', '.join(given)} recorded in the run's yaml; {verb} "
              "nothing here (no appliance: csd runs the simulated CS-2, your key authenticates this client, and "
              "the compile backend sets the execution mode).", file=sys.stderr, flush=True)
    backend.config = config
    return config


def _known(kwargs: dict) -> None:
    unknown = sorted(set(kwargs) - set(PARAMETERS))
    if unknown:
        raise InvalidArgument(f"configure: unknown parameter(s) {', '.join(unknown)}.",
                              f"Valid parameters: {', '.join(PARAMETERS)}.")


def settings(**kwargs) -> Config:
    """The Config configure's arguments make, each checked (InvalidArgument for a bad one; a
    parameter passed as None takes its default); sets nothing on the backend or the process (a
    DataExecutor's cluster config is checked the same way)."""
    _known(kwargs)
    kwargs = {name: value for name, value in kwargs.items() if value is not None}
    d = Config()
    get = kwargs.get
    num_csx = _int("num_csx", get("num_csx", d.num_csx), 1)
    if num_csx != 1:
        raise InvalidArgument(
            f"configure: num_csx={num_csx} cannot be honoured: csd manages one CS-2 system.",
            "Use num_csx=1 (the default).")
    # 0 is R1.8's "let the system choose for the model" (ModelZoo's default): here, the default.
    workers = _int("num_workers_per_csx", get("num_workers_per_csx", d.num_workers_per_csx), 0)
    workers, workers_rendezvous = _launcher_workers(workers or d.num_workers_per_csx)
    compile_only = _bool("compile_only", get("compile_only", d.compile_only))
    validate_only = _bool("validate_only", get("validate_only", d.validate_only))
    compile_only, validate_only = _launcher_mode(compile_only, validate_only)
    if compile_only and validate_only:
        raise InvalidArgument("configure: compile_only and validate_only exclude each other.",
                              "validate_only traces without compiling; compile_only compiles without "
                              "running. Pass one of them.")
    python_paths = _paths("python_paths", get("python_paths"), must_exist=True)
    job_labels, labels = _labels(get("job_labels"))
    address = get("mgmt_address", os.environ.get("CS_CONNECT") or None)
    key = get("key", os.environ.get("CS_KEY") or None)
    seed = _optional_int("seed", get("seed"), -2**63, 2**64 - 1, "None or a 64-bit integer (torch.manual_seed's)")
    config = Config(
        model_dir=_writable_dir("model_dir", _path("model_dir", get("model_dir", d.model_dir))),
        compile_dir=_path("compile_dir", get("compile_dir", d.compile_dir)),
        compile_only=compile_only,
        validate_only=validate_only,
        checkpoint_steps=_int("checkpoint_steps", get("checkpoint_steps", d.checkpoint_steps), 0),
        num_csx=num_csx,
        max_wgt_servers=_int("max_wgt_servers", get("max_wgt_servers", d.max_wgt_servers), 1),
        mount_dirs=_paths("mount_dirs", get("mount_dirs"), must_exist=True),
        python_paths=python_paths,
        transfer_processes=_int("transfer_processes", get("transfer_processes", d.transfer_processes), 1),
        num_workers_per_csx=workers,
        job_labels=job_labels,
        max_act_per_csx=_int("max_act_per_csx", get("max_act_per_csx", d.max_act_per_csx), 1),
        mgmt_address=None if address is None else _path("mgmt_address", address),
        key=None if key is None else _path("key", key),
        seed=seed,
        job_time_sec=_optional_int("job_time_sec", get("job_time_sec"), 1),
        debug_args=_debug_args(get("debug_args")),
        credentials_path=_file("credentials_path", get("credentials_path")),
        execution_strategy=_strategy(get("execution_strategy")),
        disable_version_check=_bool("disable_version_check", get("disable_version_check", d.disable_version_check)),
        labels=labels,
        workers_rendezvous=workers_rendezvous,
    )
    if not config.validate_only:  # validate_only writes no compile artifacts
        _writable_dir("compile_dir", config.compile_dir)
    return config
