"""The storage classes' common contract: a path, class methods that say whether a subclass
handles a path (is_valid_path) and whether something is there (path_exists), and get(path), which
builds the one subclass that handles it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cached_property
from io import BytesIO

import numpy

from ..utils.classes import retrieve_all_subclasses


class _Storage(ABC):
    def __init__(self, path):
        self._path = path

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return None

    @property
    def path(self):
        return self._path

    @classmethod
    def get_subclasses(cls):
        yield from retrieve_all_subclasses(cls)

    @classmethod
    def is_valid_path(cls, path: str) -> bool:
        """Whether some subclass handles `path`."""
        return any(sub.is_valid_path(path) for sub in cls.get_subclasses())

    @classmethod
    def path_exists(cls, path: str) -> bool:
        """Whether something is at `path`, asked of the subclasses that handle it."""
        return any(sub.path_exists(path) for sub in cls.get_subclasses() if sub.is_valid_path(path))

    @classmethod
    def construct(cls, path, *args, **kwargs):
        return cls(path, *args, **kwargs)

    @classmethod
    def get_type(cls, path):
        """The one subclass that handles `path`; ValueError if none or several do."""
        path = str(path)
        matches = [sub for sub in cls.get_subclasses() if sub.is_valid_path(path)]
        if not matches:
            raise ValueError(f"Could not find {cls.__name__} for invalid path: {path}")
        if len(matches) > 1:
            raise ValueError(f"Multiple {cls.__name__}s found for path: {path}.\n"
                             f"{sorted(sub.__name__ for sub in matches)}\n"
                             f"Please ensure that all {cls.__name__} are unique.")
        return matches[0]

    @classmethod
    def get(cls, path, *args, **kwargs):
        return cls.get_type(path).construct(path, *args, **kwargs)


class StorageReader(_Storage):
    """Reads a checkpoint's objects by key: read(key) -> (object, metadata); read(None) -> (None,
    the checkpoint's global metadata)."""

    @dataclass
    class Stats:
        path: str
        st_mtime: float

    def exists(self) -> bool:
        return self.path_exists(self.path)

    @property
    @abstractmethod
    def stats(self) -> "StorageReader.Stats":
        """The path and modification time of what is read."""

    @abstractmethod
    def read(self, key):
        """(object, metadata) at `key`: a numpy array, BytesIO or None, and a dict."""

    @cached_property
    def global_metadata(self) -> dict:
        return self.read(None)[1]


class DeferredStorageReader(StorageReader):
    """A reader that finds its real reader (StorageReader.get) on first use."""

    @classmethod
    def is_valid_path(cls, path: str) -> bool:
        return False  # it handles no path itself: its reader does

    @classmethod
    def path_exists(cls, path: str) -> bool:
        return False

    @cached_property
    def reader(self) -> StorageReader:
        return StorageReader.get(self.path)

    @property
    def stats(self) -> StorageReader.Stats:
        return self.reader.stats

    def read(self, key):
        return self.reader.read(key)


class StorageWriter(_Storage):
    """Writes a checkpoint's objects: write(key, array | BytesIO | None, metadata); None writes
    metadata alone (key None: the checkpoint's global metadata)."""

    def write(self, key, object=None, metadata=None):
        metadata = metadata or {}
        if isinstance(object, numpy.ndarray):
            self.write_numpy(key, object, metadata)
        elif isinstance(object, BytesIO):
            self.write_bytes(key, object, metadata)
        elif object is None:
            self.write_metadata(key, metadata)
        else:
            raise TypeError(f"StorageWriter.write: cannot write a {type(object).__name__}; "
                            "give a numpy array, a BytesIO or None (metadata only).")

    @abstractmethod
    def write_numpy(self, key, array, metadata): ...

    @abstractmethod
    def write_bytes(self, key, bytes, metadata): ...

    @abstractmethod
    def write_metadata(self, key, metadata): ...

    @classmethod
    def get(cls, path, *args, **kwargs):
        writer = super().get(path, *args, **kwargs)
        if writer.path_exists(path):
            raise FileExistsError(f"Checkpoint at '{path}' already exists. Please delete the checkpoint and run again.")
        return writer


class StorageDeleter(_Storage):
    """Deletes a checkpoint (delete()) or one object of it (delete(key)); True if it did."""

    @abstractmethod
    def delete(self, key=None) -> bool: ...
