"""`cerebras.appliance.environment`: `appliance_environ`, the environment variables the appliance
sends to the workers it starts (the input workers run the user's dataloader there).

A mapping over os.environ that remembers which keys were set through it: its keys, len and
copy() are those alone; reads and writes go to os.environ. Here the run's workers are this
process and the input workers it starts, which inherit os.environ, so what is set here reaches
them as on the real system.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping


class ApplianceEnviron(MutableMapping):
    """The appliance's environment variables: os.environ's values, the keys set through it."""

    def __init__(self):
        self._keys: set[str] = set()

    def __getitem__(self, key):
        return os.environ[key]

    def __setitem__(self, key, value):
        os.environ[key] = value
        self._keys.add(key)

    def __delitem__(self, key):
        del os.environ[key]
        self._keys.discard(key)

    def __iter__(self):
        return iter(self._keys)

    def __len__(self):
        return len(self._keys)

    def __repr__(self):
        return "ApplianceEnviron({%s})" % ", ".join(f"{k!r}: {os.environ[k]!r}" for k in self._keys)

    def copy(self) -> dict:
        """The variables set through this mapping, with their values now."""
        return {key: os.environ[key] for key in self._keys}

    def setdefault(self, key, default):
        """Set `key` to `default` unless it is set; either way it is sent to the workers."""
        self._keys.add(key)
        return os.environ.setdefault(key, default)


# The process's one mapping, as the real package's (ModelZoo imports it by this name).
appliance_environ = ApplianceEnviron()
