"""csadmin.cstorch.storage: checkpoints on disk, `cstorch.save` and `cstorch.load` (storage/checkpoint.py);
the 2.x files' attribute names (constants.py) and the real package's save/load switches
(serializers.py)."""

from . import constants, serializers
