"""How large and how deep a fault scenario file may be (docs/operations.md, "Fault scenarios"),
checked before any TOML parser sees the text: tomllib recurses once per nested array or inline
table (5,000 nested arrays end in RecursionError) and holds the whole document in memory (a 41 MB
file of 10^6 faults took 11 s and 692 MB).

Pure and stdlib only: the model (statemachine/faults/scenario.py, which checks every text it
parses, so a scenario sent over the wire is held to it too), csd and `cs` (csadmin/shared/scenario_file.py,
which reads at most MAX_BYTES + 1 bytes of a file) all use these numbers.

    MAX_BYTES     60,000 bytes of UTF-8: room for MAX_STEPS faults (~45 bytes each), and inside
                  one 64 KiB request frame, so what `cs` may send csd may take
    MAX_NESTING   10 arrays and inline tables inside each other (a scenario needs 2), and 10
                  dots in a key (`a.b.c = 1`; a scenario needs none)
"""

from __future__ import annotations

import functools
import re

MAX_BYTES = 60_000
MAX_NESTING = 10
MAX_SECONDS = 366 * 24 * 3600  # any delay or duration: a year, beyond any test, far below what breaks the arithmetic

# What can open or close a level, start a string or a comment, end a line, or part a dotted key
# from its value (or the next); all else is skipped.
_TOKEN = r'"""|\'\'\'|"|\'|#|[\[\]{}\n.=,]'
# Where a string opened by each quote ends (TOML v1.0: escapes only in "basic" strings; a
# multi-line one may end in up to two more quotes, which belong to its content).
_CLOSE = {
    '"': (r'(?:[^"\\\n]|\\.)*"', 0),
    "'": (r"[^'\n]*'", 0),
    '"""': (r'(?:[^"\\]|\\.|"(?!""))*"""(?:""?(?!"))?', re.S),
    "'''": (r"(?:[^']|'(?!''))*'''(?:''?(?!'))?", re.S),
}


@functools.cache
def _scanner() -> tuple[re.Pattern, dict[str, re.Pattern]]:
    """The patterns above, compiled at the first scan rather than at import: every one-shot `cs`
    imports this module for its numbers (csadmin/shared/ops.py), and compiling them costs ~0.3 ms."""
    return re.compile(_TOKEN), {quote: re.compile(pattern, flags) for quote, (pattern, flags) in _CLOSE.items()}


_NESTED = (f"nested more than {MAX_NESTING} deep (arrays and inline tables in each other, or a key of more "
           f"than {MAX_NESTING + 1} dotted parts); a scenario may nest at most {MAX_NESTING} deep")


def too_large(source: str) -> str:
    return f"{source} is over {MAX_BYTES:,} bytes; a scenario may be at most {MAX_BYTES:,} bytes"


def problem(text: str, source: str) -> tuple[int | None, str] | None:
    """(line or None, message) saying which limit `text` is over, or None if it is within them.
    Strings and comments are skipped as TOML reads them, so brackets inside them neither count
    nor hide real ones. A text over MAX_BYTES is refused by its length, before it is scanned."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        return None, too_large(source)
    tokens, closes = _scanner()
    depth, dots, line, at = 0, 0, 1, 0
    while (found := tokens.search(text, at)) is not None:
        token, at = found.group(), found.end()
        if token == ".":
            # A key's dots all come before its `=` (or its header's `]`) on one line; a value
            # has at most one (1.5, a time's fraction). tomllib's work grows with the square of
            # a key's parts (a 20,000-part key took 5 s and 1.6 GB).
            dots += 1
            if dots > MAX_NESTING:
                return line, _NESTED
            continue
        if token not in closes:
            dots = 0  # a new key or value starts (a quoted key part does not start one)
        if token == "\n":
            line += 1
        elif token == "#":
            newline = text.find("\n", at)
            at = len(text) if newline < 0 else newline
        elif token in closes:
            closed = closes[token].match(text, at)
            if closed is None:
                return None  # an unterminated string: the parser stops there and says where
            line += text.count("\n", at, closed.end())
            at = closed.end()
        elif token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                return line, _NESTED
        elif token in "]}":
            depth = max(0, depth - 1)
    return None
