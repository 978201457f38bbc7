"""Hostile fault scenario files (issue 24), each with what its refusal must say: the limit it is
over (csadmin/shared/scenario_limits.py) or what else is wrong. `write_all(folder)` makes them; the big
ones are written once per session (tests/fuzz/test_fuzz_scenarios.py)."""

from __future__ import annotations

import os

from csadmin.shared.scenario_limits import MAX_BYTES, MAX_NESTING

SIZE = f"at most {MAX_BYTES:,} bytes"
DEPTH = f"at most {MAX_NESTING} deep"
FAULT = '[[fault]]\nname = "psu-hardware-error"\nat = {at}\n'


def _million_faults(path: str) -> None:
    with open(path, "w") as f:  # ~45 MB: issue 24's 41 MB of 10^6 faults
        for start in range(0, 1_000_000, 10_000):
            f.write("".join(FAULT.format(at=i) for i in range(start, start + 10_000)))


def _text(content: str):
    return lambda path: _write(path, content.encode("utf-8", "surrogateescape"))


def _bytes(content: bytes):
    return lambda path: _write(path, content)


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


def _fifo(path: str) -> None:
    os.mkfifo(path)  # nobody writes: reading it must not wait for a writer


def _directory(path: str) -> None:
    os.mkdir(path)


# name → (how to make it, what the refusal says, or None: a path used as it is)
HOSTILE = {
    "dev-zero": (None, SIZE),
    "million-faults.toml": (_million_faults, SIZE),
    "one-byte-over.toml": (_text("# " + "x" * (MAX_BYTES - 2) + "\n"), SIZE),
    "wide-characters-over.toml": (_text("# " + "é" * (MAX_BYTES // 2) + "\n"), SIZE),
    "nested-arrays.toml": (_text("x = " + "[" * 5000 + "]" * 5000 + "\n"), DEPTH),
    "nested-tables.toml": (_text("x = " + "{a = " * 600 + "1" + "}" * 600 + "\n"), DEPTH),
    "nested-in-fault.toml": (_text(FAULT.format(at=1) + "x = " + "[" * 200 + "]" * 200 + "\n"), DEPTH),
    "nesting-behind-a-string.toml": (_text('x = [[[[ "]]]]" ' + "[" * 300 + "]" * 304 + "\n"), DEPTH),
    "nesting-behind-a-multiline-string.toml": (_text('d = """a""""\nx = ' + "[" * 300 + "]" * 300 + "\n"), DEPTH),
    "dotted-key.toml": (_text("a" + ".a" * 20_000 + " = 1\n"), DEPTH),  # 5 s and 1.6 GB in tomllib
    "quoted-dotted-key.toml": (_text('"a"' + '."a"' * 5_000 + " = 1\n"), DEPTH),
    "dotted-header.toml": (_text("[" + "a." * 5_000 + "a]\n"), DEPTH),
    "eleven-deep.toml": (_text("x = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1) + "\n"), DEPTH),
    "binary-junk.bin": (_bytes(bytes(range(256)) * 64), "not UTF-8 text"),
    "nul-bytes.toml": (_bytes(b'description = "a\x00b"\n' + FAULT.format(at=1).encode()), "not valid TOML"),
    "latin-1.toml": (_bytes('description = "café"\n'.encode("latin-1") + FAULT.format(at=1).encode()), "not UTF-8 text"),
    "lone-surrogate.toml": (_bytes(b'description = "\xed\xb3\xbf"\n' + FAULT.format(at=1).encode()), "not UTF-8 text"),
    "huge-integer.toml": (_text(FAULT.format(at="9" * 50_000)), "4300 digits"),
    "ansi-name.toml": (_text('[[fault]]\nname = "\x1b]0;pwned\x07"\nat = 1\n'), "not valid TOML"),
    "too-many-faults.toml": (_text("".join(FAULT.format(at=i) for i in range(1_001))), "at most 1000"),
    "fifo-without-writer": (_fifo, "no faults"),
    "a-directory": (_directory, "is a directory"),
    "missing.toml": (None, "No such file"),
}


def write_all(folder: str) -> dict[str, tuple[str, str]]:
    """name → (path, what its refusal says), every file made in `folder`."""
    made = {}
    for name, (make, says) in HOSTILE.items():
        path = "/dev/zero" if name == "dev-zero" else os.path.join(folder, name)
        if make is not None:
            make(path)
        made[name] = (path, says)
    return made


def thousand_faults() -> str:
    """A well-formed scenario of MAX_STEPS faults, none due within the hour."""
    return "".join(FAULT.format(at=3600 + i) for i in range(1_000))
