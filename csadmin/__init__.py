"""csadmin: the CS-2 control plane. The console (`cs`: csadmin.main, cli/, shell/), the client
library (csadmin.client) and what every layer shares (errors, states, protocol, connection);
csd is csadmin.daemon and the device model csadmin.statemachine (docs/design.md).

Kept light on purpose: importing `csadmin` or `csadmin.client` loads neither prompt_toolkit,
structlog nor transitions (docs/design.md, "Layers").
"""

__version__ = "0.1.0"
