"""HDF5 checkpoints on a local path, in the real package's layout: one dataset per key, a numpy
array stored as the dataset (attribute `__NUMPY__`), bytes in the attribute `__BYTES__` of an
empty dataset, each key's metadata in its dataset's attributes, the global metadata in the file's.

H5Writer writes to `<path>.<8 hex>.tmp` and renames it to `path` when its `with` block ends
without an error, so a checkpoint is either whole or absent. Arrays are LZ4-compressed (the
hdf5plugin filter) as the real package's are, unless another Compression is asked for.
"""

from __future__ import annotations

import enum
import os
import uuid
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from threading import Lock
from urllib.parse import urlparse

import h5py
import numpy

from ..utils.file import CachingFileOpener
from .base_storage import StorageDeleter, StorageReader, StorageWriter


class Compression(str, enum.Enum):
    """The dataset compression of H5Writer."""

    NONE = None
    GZIP = "gzip"
    SZIP = "szip"
    LZF = "lzf"
    LZ4 = "lz4"


DEFAULT_COMPRESSION = Compression.LZ4


class H5Interface:
    """What the three HDF5 classes share: local paths (no URL scheme), and opening the file."""

    @classmethod
    def is_valid_path(cls, path) -> bool:
        return urlparse(str(path)).scheme == ""

    @classmethod
    def path_exists(cls, path) -> bool:
        return os.path.exists(path)

    @contextmanager
    def open(self, mode: str):
        with h5py.File(self._file, mode, locking="best-effort") as f:
            yield f


class H5Reader(H5Interface, StorageReader):
    """Reads the HDF5 checkpoint at `path`; keeps the file open while the reader lives, so that a
    value read lazily stays readable if the checkpoint is deleted meanwhile."""

    _OPENER = CachingFileOpener()

    def __init__(self, path, compression: Compression = DEFAULT_COMPRESSION):
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path} does not exist")
        if not h5py.is_hdf5(path):
            raise ValueError(f"{path} is not an HDF5 file")
        super().__init__(Path(path))
        self._file = Path(path)
        self._held = self._OPENER(path, "rb")

    @property
    def fstat(self) -> os.stat_result:
        """The held file's os.fstat (ModelZoo's `cszoo checkpoint info` prints its size and time)."""
        return os.fstat(self._held.fileno())

    @property
    def stats(self) -> StorageReader.Stats:
        return StorageReader.Stats(path=self.path, st_mtime=self.fstat.st_mtime)

    def read(self, key):
        with self.open("r") as f:
            if key is None:
                return None, dict(f.attrs)
            dataset = f[key]
            metadata = dict(dataset.attrs)
            if (raw := dataset.attrs.get("__BYTES__")) is not None:
                return BytesIO(raw.tobytes()), metadata
            if dataset.attrs.get("__NUMPY__"):
                return dataset[...], metadata
            return None, metadata


class H5Writer(H5Interface, StorageWriter):
    """Writes the HDF5 checkpoint `path` (atomically, on leaving its `with` block)."""

    def __init__(self, path, compression: Compression = DEFAULT_COMPRESSION):
        super().__init__(path)
        self.temp_path = Path(f"{path}.{uuid.uuid4().hex[:8]}.tmp")
        self._file = self.temp_path
        self.compression = Compression(compression)
        self.lock = Lock()

    def __exit__(self, exc_type, exc_value, traceback):
        if exc_type is None:
            self.temp_path.rename(self.path)
        else:
            self.temp_path.unlink(missing_ok=True)

    def _compress_opts(self) -> dict:
        if self.compression is Compression.NONE:
            return {}
        if self.compression is Compression.LZ4:
            import hdf5plugin  # the LZ4 filter, registered with HDF5 on import

            return dict(hdf5plugin.LZ4())
        options = {Compression.GZIP: 0, Compression.SZIP: "", Compression.LZF: None}[self.compression]
        return {"compression": self.compression.value, "compression_opts": options}

    def write_numpy(self, key, array, metadata):
        with self.lock, self.open("a") as f:
            shape = tuple(array.shape)
            dataset = f.require_dataset(key, shape, array.dtype, exact=True, **(self._compress_opts() if shape else {}))
            dataset[...] = array
            dataset.attrs.update(metadata)
            dataset.attrs["__NUMPY__"] = True

    def write_bytes(self, key, bytes, metadata):
        with self.lock, self.open("a") as f:
            dataset = f.create_dataset(key, data=h5py.Empty("f"), track_order=True)
            dataset.attrs.update(metadata)
            dataset.attrs["__BYTES__"] = numpy.void(bytes.getbuffer())

    def write_metadata(self, key, metadata):
        with self.lock, self.open("a") as f:
            if key is None:
                f.attrs.update(metadata)
            else:
                f.require_dataset(key, shape=None, dtype="f", data=h5py.Empty("f")).attrs.update(metadata)

    @property
    def reader(self) -> type:
        return H5Reader


class H5Deleter(H5Interface, StorageDeleter):
    """Deletes the HDF5 checkpoint at `path`, or one key of it."""

    def __init__(self, path):
        super().__init__(path)
        self._file = path

    def delete(self, key=None) -> bool:
        if key is None:
            Path(self.path).unlink(missing_ok=True)
            return True
        with self.open("a") as f:
            if key not in f:
                return False
            del f[key]
        return True
