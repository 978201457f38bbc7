"""R1.8's `cerebras_appliance.environment`: `appliance_environ`, the environment the appliance
passes on to the processes it starts (ModelZoo reads and sets its variables there). Here there is
no appliance: the run's processes are this process and the input workers it starts, which inherit
its environment, so it is this process's own `os.environ`. Also the package's
`DEFAULT_COMPILE_DIR`, configure's default compile_dir."""

from __future__ import annotations

import os

from csadmin.cstorch.backend.config import Config

appliance_environ = os.environ

# cerebras_appliance.DEFAULT_COMPILE_DIR: where compiles go by default (configure's compile_dir).
DEFAULT_COMPILE_DIR = Config.compile_dir
