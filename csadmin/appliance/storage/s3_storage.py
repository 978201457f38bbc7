"""S3 checkpoints (`s3://bucket/key` paths): recognised, and refused. The real package reads and
writes them through boto3 against an object store; this machine reaches none, so asking whether
an S3 checkpoint exists, or building a reader, writer or deleter for one, raises a coded error
that says so. Only is_valid_path answers, so that ModelZoo can tell an S3 path from a local one.
"""

from __future__ import annotations

from urllib.parse import urlparse

from csadmin.errors import InvalidState

from .base_storage import StorageDeleter, StorageReader, StorageWriter


def refuse(path) -> InvalidState:
    """The error for any use of the S3 checkpoint `path`."""
    return InvalidState(f"S3 storage ({path}) is not built here: this system reaches no object store "
                        "(there is no network).", "Save and load checkpoints on a local path instead.")


class S3Interface:
    """S3 paths: recognised; anything more is refused."""

    @classmethod
    def is_valid_path(cls, path) -> bool:
        return urlparse(str(path)).scheme == "s3"

    @classmethod
    def path_exists(cls, path) -> bool:
        raise refuse(path)

    def __init__(self, path, *args, **kwargs):
        raise refuse(path)


class S3Reader(S3Interface, StorageReader):
    """An S3 checkpoint's reader (refused)."""

    @property
    def stats(self):
        raise refuse(self.path)

    def read(self, key):
        raise refuse(self.path)


class S3Writer(S3Interface, StorageWriter):
    """An S3 checkpoint's writer (refused)."""

    def write_numpy(self, key, array, metadata):
        raise refuse(self.path)

    def write_bytes(self, key, bytes, metadata):
        raise refuse(self.path)

    def write_metadata(self, key, metadata):
        raise refuse(self.path)


class S3Deleter(S3Interface, StorageDeleter):
    """An S3 checkpoint's deleter (refused)."""

    def delete(self, key=None) -> bool:
        raise refuse(self.path)
