"""R1.8's `cerebras_appliance.environment`: `appliance_environ`, the environment the appliance
passes on to the processes it starts (ModelZoo reads and sets its variables there). Here there is
no appliance: the run's processes are this process and the input workers it starts, which inherit
its environment, so it is this process's own `os.environ`."""

from __future__ import annotations

import os

appliance_environ = os.environ
