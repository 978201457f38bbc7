"""The real csd with fault switches, for the fail-closed tests (never used outside tests).

A switch is a file in $CSD_FAULT_DIR; the test creates it when it wants the fault:
  crash-authenticator  the registry lookup the ZAP handler makes raises (a bug in the handler)
  stop-authenticator   the next request stops the authenticator (its socket is closed, unbound)
  crash-request        handling a `system.date` request raises (a bug past the decoder)
  crash-tick           the loop's timer work raises on every turn (a bug outside any request)
"""

import os
import sys

from csadmin.daemon import main
from csadmin.daemon.auth import key_registry
from csadmin.daemon.serve import dispatch

FAULT_DIR = os.environ["CSD_FAULT_DIR"]


def _switched_on(name: str) -> bool:
    return os.path.exists(os.path.join(FAULT_DIR, name))


_name_of = key_registry.Registry.name_of
_submit = dispatch.Dispatcher.submit
_tick = dispatch.Dispatcher.tick


def name_of(self, public):
    if _switched_on("crash-authenticator"):
        raise RuntimeError("fault injected by tests/faulty_csd.py")
    return _name_of(self, public)


def submit(self, client, frame, caller, parts=1):
    if _switched_on("stop-authenticator") and self.auth.healthy:
        self.auth.stop("stopped by tests/faulty_csd.py")
    if _switched_on("crash-request") and b'"system.date"' in frame:
        raise KeyError("fault injected by tests/faulty_csd.py")
    return _submit(self, client, frame, caller, parts)


def tick(self):
    if _switched_on("crash-tick"):
        raise ZeroDivisionError("fault injected by tests/faulty_csd.py")
    return _tick(self)


key_registry.Registry.name_of = name_of
dispatch.Dispatcher.submit = submit
dispatch.Dispatcher.tick = tick

if __name__ == "__main__":
    sys.exit(main.main())
