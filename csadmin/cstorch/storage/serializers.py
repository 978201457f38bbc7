"""`cstorch.storage.serializers`' switches, which ModelZoo's trainer and checkpoint tools set
around cstorch.save / cstorch.load: `use_external_link`, `cache_deferred_tensors`,
`use_cstorch_types`.

    with cstorch.storage.serializers.use_external_link(True):    # the trainer's autorestart file
        cstorch.save(state_dict, path)
    bool(cstorch.storage.serializers.cache_deferred_tensors)      # True by default

Each is a BooleanContext, as in the real package: `bool(flag)` is its value, `with flag(v):`
sets it for the body and restores it after. They steer how the real package handles tensors that
stay on the appliance or in a file until read ("deferred"): written as HDF5 links to the file they
came from, cached once read, pickled as cstorch types. Here every tensor is in this process and
cstorch.load reads a file's tensors when it loads it, so a saved file always holds its tensors'
data itself and loads the same whatever the switches say; they are kept, readable and scoped, so
a script that sets them runs as it does on the real package.
"""

import contextlib


class BooleanContext:
    """A process-wide switch with a default, set for the body of `with switch(value):`. (Process-
    wide as in the real package: the switch says how this process saves and loads.)"""

    def __init__(self, default: bool):
        self.value = bool(default)

    def __bool__(self) -> bool:
        return self.value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value={self.value})"

    @contextlib.contextmanager
    def __call__(self, value: bool):
        before, self.value = self.value, bool(value)
        try:
            yield
        finally:
            self.value = before


use_external_link = BooleanContext(default=False)
use_cstorch_types = BooleanContext(default=False)
cache_deferred_tensors = BooleanContext(default=True)
