"""The op specs (csadmin/shared/ops.py) against what implements and documents them: every op has exactly
one module in daemon/commands/ and every module exactly one op; docs/protocol.md names exactly the
ops, docs/cli.md exactly the commands that print a result. So an op or command cannot be added,
renamed or removed in one place and forgotten in another."""

from __future__ import annotations

import os
import re

from csadmin.shared import ops
from csadmin.cli.commands import COMMANDS as CLI_COMMANDS
from csadmin.daemon.commands import COMMANDS
from tests.harness import ROOT


def _read(*path: str) -> str:
    with open(os.path.join(ROOT, *path), encoding="utf-8") as f:
        return f.read()


def test_every_op_has_one_module_and_every_module_one_op():
    folder = os.path.join(ROOT, "daemon", "commands")
    modules = {name[:-3] for name in os.listdir(folder) if name.endswith(".py") and name != "__init__.py"}
    assert modules == {op.module for op in ops.ALL}
    assert len({op.name for op in ops.ALL}) == len(ops.ALL)
    for op in ops.ALL:
        assert COMMANDS[op.name].SPEC is op, op.name  # the module carries out the op it is named for


def test_each_spec_is_named_for_its_op_and_well_formed():
    named = {name: value for name, value in vars(ops).items() if isinstance(value, ops.Op)}
    assert list(named.values()) == list(ops.ALL)
    for constant, op in named.items():
        assert constant == op.name.replace(".", "_").upper(), constant
        assert op.role in (ops.ADMIN, ops.OPERATOR, ops.VIEWER), op.name
        assert op.durable or op.mutating, f"{op.name}: only a change can be kept in memory rather than durably"
        assert not (op.cached and op.mutating), f"{op.name}: a change is never answered from the read cache"
        assert not op.dry_run or op.mutating, f"{op.name}: only a change has a dry run"
        assert op.reply and len(set(op.reply)) == len(op.reply), op.name


def _protocol_ops() -> set[str]:
    """The ops docs/protocol.md's Operations table has a row for."""
    section = _read("docs", "protocol.md").split("\n## Operations\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for m in re.finditer(r"^\| `([a-z_.]+)`", section, re.M)}


def test_protocol_doc_has_a_row_for_exactly_the_ops():
    assert _protocol_ops() == {op.name for op in ops.ALL}


def _cli_commands() -> set[str]:
    """The commands docs/cli.md gives the JSON keys of: each bullet's leading `command ARGS`."""
    names = set()
    for line in _read("docs", "cli.md").splitlines():
        if not line.startswith("- `"):
            continue
        lead = line[2:].split(": ", 1)[0]
        for span in re.findall(r"`([^`]+)`", lead):
            words = []
            for word in span.split():
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break
                words.append(word)
            if words:
                names.add(" ".join(words))
    return names


def test_cli_doc_names_exactly_the_commands_that_print_a_result():
    printing = {c.name for c in CLI_COMMANDS if c.output}
    assert _cli_commands() == printing
