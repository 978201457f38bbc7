"""cstorch.save / cstorch.load: checkpoint files the real package writes and reads, used like
torch.save/torch.load.

    cstorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, "ckpt.mdl")
    state_dict = cstorch.load("ckpt.mdl")                 # map_location="cpu" likewise
    torch.save(cstorch.load("ckpt.mdl", map_location="cpu"), "ckpt.pt")   # a plain PyTorch one

`save` writes the format of the API generation the script uses: the 2.x package's (format_v2.py)
for a script of the later releases, R1.8's (format_r18.py) for one that configured its run with
R1.8's `cstorch.configure`. `load` reads either, the 2.0-era files, and this project's earlier
layout (format_csadmin1.py), whichever the file is; values are read eagerly.

What round-trips exactly, values and types: nested dicts (OrderedDict stays one), lists, tuples
and sets of tensors (every dtype, bfloat16 and float8 included, any shape, 0-d and empty), ints,
floats (nan, inf and -0.0 too), bools, None, str, and (2.x format) bytes and torch.Size; a dict's
keys may be any of the scalar types (an optimizer's state is keyed by int). Anything else is
refused before the file is touched, naming where it is. A tensor comes back as a plain CPU tensor
(a Parameter as a tensor, like torch.load of a state dict), contiguous, its grad not kept; a
tensor saved twice in one state dict (tied weights) comes back as one tensor.

The file is written atomically: to a temporary file beside it, fsync'd, then renamed over `path`
(and the directory fsync'd), so a crash leaves the old checkpoint or the new one, never half of
one. Every tensor carries the CRC-32 of its bytes, so a damaged byte is found on load. A file load
cannot read as a checkpoint is a `BadCheckpoint` naming it (and the entry, when one is damaged).
Loading runs no code from the file: the pickles the real formats hold are read by an unpickler
that resolves only a state dict's own names (pickles.py).
"""

from __future__ import annotations

import os

import h5py
import torch

from csadmin import __version__ as _csadmin_version
from csadmin.errors import BadCheckpoint, InvalidArgument, NotFound
from csadmin.shared.atomic_write import Replacing

from ..backend import process_backend
from . import format_csadmin1, format_r18, format_v2, tree

# What the 2.x files' __cstorch_version__ says: the API generation written, and who wrote it.
CSTORCH_VERSION = f"2.10.0+csadmin{_csadmin_version}"


def save(state_dict, path) -> None:
    """Write `state_dict` (see the module docstring for what it may hold) to `path` atomically."""
    path = _path(path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise NotFound(f"Cannot save the checkpoint {path}: no directory {directory}.",
                       hint="Create the directory first (os.makedirs).")
    r18 = writes_r18()
    try:
        with Replacing(path) as temporary, h5py.File(temporary, "w-") as f:
            if r18:
                format_r18.write(f, state_dict)
            else:
                format_v2.write(f, state_dict, CSTORCH_VERSION)
    except (format_v2.Unsupported, format_r18.Unsupported, tree.TreeError) as e:
        raise InvalidArgument(str(e), hint="Convert it to one of those (e.g. a numpy value with .item(), an array "
                                           "with torch.from_numpy, a sparse tensor with .to_dense()).") from None


def writes_r18() -> bool:
    """True for a script of the first release (a run configured with cstorch.configure, not
    cstorch.backend): its checkpoints are R1.8's files, which its own tools read."""
    process = process_backend.current()
    return process.config is not None and not process.executor_required


def load(path, map_location=None):
    """Read a checkpoint: the real package's 2.x or R1.8 file, or this project's earlier one.
    `map_location` (None, "cpu", a torch.device or its name) is where its tensors go; None leaves
    them on the CPU, as does the real package's "cache" (keep lazily read tensors once read: these
    are read eagerly)."""
    path = _path(path)
    device = _device(map_location)
    if not os.path.exists(path):
        raise NotFound(f"No checkpoint file {path}.", hint="Check the path (cstorch.save writes it).")
    if os.path.isdir(path):
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: it is a directory.")
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: not an HDF5 file, or truncated ({e}).") from None
    with f:
        try:
            return _read(f, path, device)
        except (format_v2.Damaged, tree.TreeError, ValueError) as e:
            raise BadCheckpoint(f"Cannot load the checkpoint {path}: {e}.") from None
        except OSError as e:  # h5py: a truncated or damaged file found while reading it
            raise BadCheckpoint(f"Cannot load the checkpoint {path}: the file is damaged ({e}).") from None


def _read(f: h5py.File, path: str, device):
    if format_csadmin1.is_one(f):
        return format_csadmin1.read(f, device)
    version = f.attrs.get("__version__")
    if version is None and "__spec__" not in f.attrs:
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: an HDF5 file, but not a cstorch checkpoint "
                            "(no __version__ or __spec__ attribute).")
    version = 0.1 if version is None else float(version)
    if version > format_v2.VERSION:
        raise BadCheckpoint(f"Cannot load the checkpoint {path}: format version {version}; this cstorch reads "
                            f"versions up to {format_v2.VERSION} (cerebras-pytorch 2.10's).",
                            hint="Load it with the cstorch that wrote it.")
    if version >= format_v2.VERSION:
        return format_v2.read(f, device)
    return format_r18.read(f, path, device)


def _path(path) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"A checkpoint path is a str or os.PathLike, not {type(path).__name__}.")
    return os.fspath(path)


def _device(map_location):
    if map_location is None or map_location == "cache":
        return None
    if isinstance(map_location, (str, torch.device)):
        try:
            return torch.device(map_location)
        except (RuntimeError, ValueError):
            pass
    raise InvalidArgument(f"map_location {map_location!r} is not a device.",
                          hint='Pass None, "cpu" or a torch.device.')
