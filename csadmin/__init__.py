"""csadmin: the CS-2 control plane's console (`cs`), client library and wire protocol.

Kept light on purpose: importing `csadmin` or `csadmin.client` loads neither prompt_toolkit,
structlog nor transitions (DESIGN.md §6).
"""

__version__ = "0.1.0"
