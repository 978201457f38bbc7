"""cstorch.backends: the backend's settings by backend kind, as the later releases name them.

    cstorch.backends.csx.precision.optimization_level = 2
    cstorch.backends.csx.debug.retrace_every_iteration = True

`csx` is the process's backend's settings object (process_backend.Backend.csx,
backend/csx_settings.py), looked up at each access: this module keeps no state of its own, and
`process_backend.reset()` starts them afresh.
"""

from __future__ import annotations

from ..backend import process_backend


def __getattr__(name: str):
    if name == "csx":
        return process_backend.current().csx
    raise AttributeError(f"module 'cstorch.backends' has no attribute {name!r}; it has csx.")
