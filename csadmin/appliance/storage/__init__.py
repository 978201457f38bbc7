"""`cerebras.appliance.storage`: where checkpoints are read, written and deleted, chosen by path.

`StorageReader.get(path)` (Writer, Deleter likewise) picks the one subclass whose is_valid_path
accepts `path`: a local path (no URL scheme) is HDF5 (h5_storage: H5Reader, H5Writer, H5Deleter,
the real package's layout of keys, datasets and attributes); an `s3://` URL is S3 (s3_storage),
which is refused here with a coded error, since this machine reaches no object store. ModelZoo's
checkpoint callbacks ask these classes whether a checkpoint path is valid and exists, and delete
the checkpoints it no longer keeps with StorageDeleter. The real package's serializer registry
(context, registry, serializers) is its cstorch.save's machinery, which csadmin.cstorch.storage
does its own way; it is not here.
"""

from .base_storage import DeferredStorageReader, StorageDeleter, StorageReader, StorageWriter
from .h5_storage import H5Deleter, H5Reader, H5Writer
from .s3_storage import S3Deleter, S3Reader, S3Writer

__all__ = ["StorageReader", "StorageWriter", "StorageDeleter", "DeferredStorageReader", "H5Reader", "H5Writer",
           "H5Deleter", "S3Reader", "S3Writer", "S3Deleter"]
