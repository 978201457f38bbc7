"""csadmin.cstorch.storage: checkpoints on disk, `cstorch.save` and `cstorch.load` (storage/checkpoint.py)."""
