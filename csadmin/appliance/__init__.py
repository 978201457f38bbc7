"""csadmin.appliance: the vendor's appliance client package, `cerebras.appliance` 2.10, with what
ModelZoo 2.10 imports from it: storage (the checkpoint readers, writers and deleters), log
(ClassLogger, named_class_logger, the VERBOSE and TRACE levels), errors, environment, utils
(file, units, ini, debug_args, classes) and cluster.client's TelemetryClient.

`python -m csadmin.cstorch` registers every module here under `cerebras.appliance` (and
`cerebras.appliance.X`) for the script it runs. On the real system this package is the client of
the cluster's management server; here csd is the system and csadmin.cstorch talks to it, so what
here would reach a cluster or the network says so with a coded error (S3 storage) or, where the
real one only reports (telemetry), does nothing and says so once.

It never imports torch (the real package does not either) nor anything of csadmin but the
errors; csadmin.cstorch may import it.
"""

from .log import logger

__version__ = "2.10.0"  # the release whose names these are (cerebras.appliance._version)
# Where a compile goes when configure names no compile_dir (the real package's default).
DEFAULT_COMPILE_DIR = "cached_compile"
