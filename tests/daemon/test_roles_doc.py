"""docs/protocol.md's table of operations gives each op the least role it declares (csadmin/shared/ops.py
`role`), and docs/security.md's roles table names the roles csd knows: a new op, or a changed
role, must change the doc too."""

import os
import re

from csadmin.shared import ops
from csadmin.daemon.auth.key_registry import ROLES
from tests.harness import ROOT


def _doc(name: str) -> str:
    with open(os.path.join(ROOT, "docs", name), encoding="utf-8") as f:
        return f.read()


def documented_roles() -> dict[str, str]:
    """op → the role its row of docs/protocol.md's operations table gives."""
    section = _doc("protocol.md").split("\n## Operations\n", 1)[1].split("\n## ", 1)[0]
    return dict(re.findall(r"^\| `([a-z_.]+)` \| ([a-z]+) \|", section, flags=re.M))


def test_every_op_row_gives_the_role_the_op_declares():
    assert documented_roles() == {op.name: op.role for op in ops.ALL}


def test_the_roles_table_names_exactly_the_roles_csd_knows():
    table = _doc("security.md").split("## Roles", 1)[1]
    assert set(re.findall(r"^\| `([a-z]+)` \|", table, flags=re.M)) == set(ROLES)
