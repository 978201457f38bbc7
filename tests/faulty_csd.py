"""The real csd with fault switches, for the fail-closed tests (never used outside tests).

A switch is a file in $CSD_FAULT_DIR; the test creates it when it wants the fault:
  crash-authenticator  the registry lookup the ZAP handler makes raises (a bug in the handler)
  stop-authenticator   the next request stops the authenticator (its socket is closed, unbound)
"""

import os
import sys

from daemon import keys, main, server

FAULT_DIR = os.environ["CSD_FAULT_DIR"]


def _switched_on(name: str) -> bool:
    return os.path.exists(os.path.join(FAULT_DIR, name))


_name_of = keys.Registry.name_of
_caller = server.Server._caller


def name_of(self, public):
    if _switched_on("crash-authenticator"):
        raise RuntimeError("fault injected by tests/faulty_csd.py")
    return _name_of(self, public)


def caller(self, identity, frame):
    if _switched_on("stop-authenticator") and self.auth.healthy:
        self.auth.stop("stopped by tests/faulty_csd.py")
    return _caller(self, identity, frame)


keys.Registry.name_of = name_of
server.Server._caller = caller

if __name__ == "__main__":
    sys.exit(main.main())
