"""Hypothesis strategies for hostile requests: the envelope and every op's arguments, valid
and not, as JSON and as bytes (lone surrogates as escapes and as raw ED A0 80 bytes, NaN,
numbers beyond 64 bits, deep and wide nesting, truncated and flipped bytes).

Each example is a `Frame`: the bytes to send, the key that sends them, and whether csd must
answer (it must answer everything that is one frame of at most 64 KiB).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from hypothesis import strategies as st

from csadmin.shared.opargs import Arg
from csadmin.daemon.commands import COMMANDS

VIEWER, ADMIN = "viewer", "admin"
BIG_INTS = [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 10**30, 10**400, -(10**400)]
FLOATS = [1e308, -0.0, 5e-324, float("nan"), float("inf"), -float("inf")]  # hypothesis favours the first


class Frame(NamedTuple):
    key: str  # which client key sends it: VIEWER or ADMIN
    data: bytes
    note: str  # what it is, for a failure message


# Text that includes lone surrogates (category Cs), control characters and astral planes.
# Surrogates in one string out of a dozen or so: enough to hit every decoder path, few enough
# that most frames get past the decoder to the ops.
hostile_text = st.text(max_size=40) | st.text(max_size=40) | st.text(max_size=40) | st.sampled_from(["run-000001", "EventActivate*", "train", "eval", "PIPELINED", "weight-streaming",
                     "train_and_eval", "*" * 50, "", " ", "\x00", "\ud800", "a\udfffb", "\udbff\udc00"])

finite = st.floats(allow_nan=False, allow_infinity=False)
numbers = st.one_of(st.integers(), st.integers(), finite, finite, st.sampled_from(BIG_INTS), st.sampled_from(FLOATS))

scalars = st.none() | st.booleans() | numbers | hostile_text

json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(hostile_text, children, max_size=4),
    max_leaves=12,
)


def _value_for(spec: Arg):
    """Values for one argument: mostly of its type (some out of range), sometimes anything."""
    typed = {
        int: st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(BIG_INTS),
        float: numbers,
        bool: st.booleans(),
        str: hostile_text,
        dict: st.dictionaries(hostile_text, json_values, max_size=8),
    }[spec.type]
    return st.one_of(typed, typed, json_values)


@st.composite
def args_for(draw, op: str):
    schema = COMMANDS[op].SPEC.args
    known = draw(st.fixed_dictionaries({}, optional={name: _value_for(spec) for name, spec in schema.items()}))
    if draw(often(5)):
        return known
    return {**draw(st.dictionaries(hostile_text, json_values, max_size=2)), **known} if draw(often(1)) \
        else draw(json_values)


good_ids = st.text(min_size=1, max_size=20) | st.integers(min_value=-(2**63), max_value=2**63 - 1)
bad_ids = st.sampled_from(BIG_INTS) | st.sampled_from(["\ud800", "x" * 200, True, None, [1], {"a": 1}, 1.5, ""])


def often(n: int):
    """True n times in n+1 (hypothesis favours the first of a sampled list, so this is a floor)."""
    return st.sampled_from([True] * n + [False])


@st.composite
def ids(draw):
    return draw(good_ids) if draw(often(8)) else draw(bad_ids)  # mostly usable: most frames reach an op

# Ops an admin may fuzz without changing anything: reads, and changes only as dry runs.
DRY_RUN_OPS = sorted(op for op, m in COMMANDS.items() if "dry_run" in m.SPEC.args)
READ_OPS = sorted(op for op, m in COMMANDS.items() if not m.SPEC.mutating)
ALL_OPS = sorted(COMMANDS)


@st.composite
def envelopes(draw, key: str) -> dict:
    if key == ADMIN:
        op = draw(st.sampled_from(READ_OPS + DRY_RUN_OPS))
        args = draw(args_for(op))
        if op in DRY_RUN_OPS:  # never a real change: the state must stay as it is
            args = {**args, "dry_run": True} if isinstance(args, dict) else {"dry_run": True}
        return {"v": 1, "id": draw(ids()), "op": op, "args": args}
    op = draw(st.sampled_from(ALL_OPS) if draw(st.sampled_from([True] * 7 + [False])) else hostile_text)
    msg = {"v": draw(st.sampled_from([1] * 12 + [2, 0, "1", None, True])), "id": draw(ids()), "op": op,
           "args": draw(args_for(op) if op in COMMANDS else json_values)}
    if draw(st.sampled_from([False] * 9 + [True])):
        for name in draw(st.lists(st.sampled_from(["v", "id", "op", "args"]), min_size=1, max_size=2)):
            msg.pop(name, None)
    if draw(st.booleans()) and draw(st.booleans()):
        msg[draw(hostile_text)] = draw(json_values)
    return msg


def _encode(msg, ascii_only: bool) -> bytes:
    # surrogatepass: a lone surrogate becomes the raw bytes ED A0 80, as a hostile client sends it.
    return json.dumps(msg, ensure_ascii=ascii_only, allow_nan=True).encode("utf-8", "surrogatepass")


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """`data` with a few bytes flipped, dropped or inserted, or cut short."""
    out = bytearray(data)
    for _ in range(draw(st.integers(1, 3))):
        if not out:
            break
        at = draw(st.integers(0, len(out) - 1))
        how = draw(st.sampled_from(["flip", "drop", "insert", "cut"]))
        if how == "flip":
            out[at] = draw(st.integers(0, 255))
        elif how == "drop":
            del out[at]
        elif how == "insert":
            out[at:at] = draw(st.sampled_from([b"[", b"{", b"\xed\xa0\x80", b"\\ud800", b'"', b"\x00", b"\xff"]))
        else:
            del out[at:]
    return bytes(out)


# What each generated frame is, by weight (hypothesis favours the first entries of small ranges,
# so the mix is a list to sample from, not a dice roll).
KINDS = ["envelope"] * 12 + ["mutated"] * 3 + ["bytes", "nesting"]


@st.composite
def frames(draw) -> Frame:
    key = draw(st.sampled_from([VIEWER, VIEWER, ADMIN]))
    kind = draw(st.sampled_from(KINDS))
    msg = draw(envelopes(key))
    data = _encode(msg, draw(often(1)))
    # Byte damage only where it cannot turn into a change: the viewer may change nothing anyway.
    if kind == "mutated" and key == VIEWER:
        data = draw(mutated(data))
    elif kind == "bytes" and key == VIEWER:
        data = draw(st.binary(max_size=200))
    elif kind == "nesting":
        depth = draw(st.integers(1, 3000))
        data, kind = b"[" * depth + b"]" * depth, f"nesting {depth}"
    else:
        kind = "envelope"
    return Frame(key, data, kind)
