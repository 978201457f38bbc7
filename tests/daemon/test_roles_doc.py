"""docs/security.md's roles table lists, for each role, exactly the ops that declare it as their
least role (daemon/commands/*.py `ROLE`): a new op, or a changed role, must change the doc too."""

import os
import re

from csadmin.daemon.commands import COMMANDS
from csadmin.daemon.keys import ROLES
from tests.harness import ROOT


def roles_table() -> dict[str, set[str]]:
    """role → the op names its row of the table lists (in backticks)."""
    with open(os.path.join(ROOT, "docs", "security.md"), encoding="utf-8") as f:
        text = f.read()
    table = text[text.index("## Roles"):]
    rows = {}
    for role in ROLES:
        (row,) = re.findall(rf"^\| `{role}` \|.*$", table, flags=re.M)
        rows[role] = set(re.findall(r"`([a-z]+(?:\.[a-z_]+)+)`", row))
    return rows


def test_every_role_row_lists_exactly_the_ops_declaring_that_role():
    documented = roles_table()
    for role in ROLES:
        declared = {name for name, module in COMMANDS.items() if module.SPEC.role == role}
        assert documented[role] == declared, (role, "missing:", declared - documented[role],
                                              "not so:", documented[role] - declared)


def test_the_table_speaks_of_every_op():
    assert set().union(*roles_table().values()) == set(COMMANDS)
