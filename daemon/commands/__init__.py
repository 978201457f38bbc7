"""The daemon's operations, one module each; its docstring is the operation's documentation.

`COMMANDS` is a plain table from op name to module: adding an op means writing its module and
listing it here, nothing else.
"""

from . import (
    audit_show,
    config_execmode_setup,
    config_execmode_show,
    events_show,
    meta_hello,
    meta_whoami,
    system_activate,
    system_show,
    system_standby,
)

COMMANDS = {
    m.NAME: m
    for m in (
        meta_hello,
        system_show,
        system_standby,
        system_activate,
        config_execmode_show,
        config_execmode_setup,
        events_show,
        meta_whoami,
        audit_show,
    )
}
