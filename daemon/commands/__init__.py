"""The daemon's operations, one module each: the module for op `a.b.c` is `a_b_c.py`, its
docstring is the operation's documentation, `SPEC` the op it carries out (csadmin/shared/ops.py, where
the op is declared: arguments, role, durability, reply) and `execute(ctx, args, caller)` does it.

`COMMANDS` is a plain table from op name to module, read from csadmin/shared/ops.py's list: adding an op
means declaring it there and writing its module here, nothing else (tests/test_ops.py checks that
every op has its module, every module its op, and each module's SPEC is the op it is named for).
"""

from importlib import import_module

from csadmin.shared import ops

COMMANDS = {op.name: import_module(f"{__name__}.{op.module}") for op in ops.ALL}
