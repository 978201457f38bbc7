"""cstorch.backends: the backend's settings by backend kind, as the later releases name them.

    cstorch.backends.csx.precision.optimization_level = 2
    cstorch.backends.csx.debug.retrace_every_iteration = True

`csx` is the process's backend's settings object (state.Backend.csx, csx_settings.py), looked up
at each access: this module keeps no state of its own, and `state.reset()` starts them afresh.
"""

from __future__ import annotations

import csadmin.cstorch.state as state


def __getattr__(name: str):
    if name == "csx":
        return state.current().csx
    raise AttributeError(f"module 'cstorch.backends' has no attribute {name!r}; it has csx.")
