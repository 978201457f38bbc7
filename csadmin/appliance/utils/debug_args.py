"""`cerebras.appliance.utils.debug_args`: DebugArgs, the appliance's debug settings, and the
helpers that read, write and update them.

On the real system DebugArgs is a protobuf message of the cluster's compile and runtime options,
written and read in protobuf's text format. Here the one part a ModelZoo config reaches is its
`ini` (the compiler's INI options ModelZoo sets defaults for, utils/ini.py): four maps, bools,
ints, floats and strings, by option name. A debug args file is read in the same text format; a
field other than `ini` is refused with a coded error naming it, since nothing here would act on
it. No option changes what csd runs: the run's yaml records the ones a run was given.
"""

from __future__ import annotations

import json
import re

from csadmin.errors import InvalidArgument, NotFound

KINDS = {"bools": bool, "ints": int, "floats": float, "strings": str}


class Ini:
    """DebugArgs.ini: the INI options, one map per value type."""

    def __init__(self):
        self.bools: dict[str, bool] = {}
        self.ints: dict[str, int] = {}
        self.floats: dict[str, float] = {}
        self.strings: dict[str, str] = {}


class DebugArgs:
    """The appliance's debug settings: here, its INI options (`ini`)."""

    def __init__(self):
        self.ini = Ini()

    def MergeFrom(self, other: "DebugArgs") -> None:  # noqa: N802  (protobuf's name)
        """Take `other`'s options over these (protobuf's merge of map fields)."""
        for kind in KINDS:
            getattr(self.ini, kind).update(getattr(other.ini, kind))

    def settings(self) -> dict:
        """The options set, by type, for the run's yaml."""
        return {kind: dict(values) for kind in KINDS if (values := getattr(self.ini, kind))}

    def __eq__(self, other) -> bool:
        return isinstance(other, DebugArgs) and self.settings() == other.settings()

    def __repr__(self) -> str:
        return f"DebugArgs({self.settings()})"


def write_debug_args(debug_args: DebugArgs, path: str) -> None:
    """Write `debug_args` to `path` in protobuf's text format."""
    lines = []
    for kind in KINDS:
        for key, value in getattr(debug_args.ini, kind).items():
            text = _text(kind, value)
            lines += [f"  {kind} {{", f"    key: {json.dumps(key)}", f"    value: {text}", "  }"]
    with open(path, "w") as f:
        f.write("ini {\n" + "".join(line + "\n" for line in lines) + "}\n" if lines else "")


def _text(kind: str, value) -> str:
    """`value` as protobuf's text format writes a map value of `kind`."""
    if kind == "bools":
        return "true" if value else "false"
    return json.dumps(value) if kind == "strings" else repr(value)


def get_debug_args(value) -> DebugArgs:
    """`value` itself if it is DebugArgs, else the DebugArgs of the file at `value` (None or "":
    empty ones)."""
    if isinstance(value, DebugArgs):
        return value
    debug_args = DebugArgs()
    if value:
        try:
            with open(value) as f:
                text = f.read()
        except FileNotFoundError:
            raise NotFound(f"debug args file {value!r} does not exist.", "Check the path.") from None
        _parse(text, debug_args, value)
    return debug_args


def update_debug_args_from_keys(debug_args: DebugArgs, flat_dargs: dict) -> None:
    """Set options from a dict with dotted keys or nested dicts (`{"ini.bools.x": True}` or
    `{"ini": {"bools": {"x": True}}}`)."""
    for key, value in flat_dargs.items():
        if isinstance(value, dict):
            update_debug_args_from_keys(debug_args, {f"{key}.{k}": v for k, v in value.items()})
            continue
        parts = key.split(".")
        if len(parts) != 3 or parts[0] != "ini" or parts[1] not in KINDS:
            raise InvalidArgument(f"debug_args: `{key}` is not built here; only the INI options are "
                                  "(ini.bools.NAME, ini.ints.NAME, ini.floats.NAME, ini.strings.NAME).",
                                  "Remove it from the config's debug_args.")
        getattr(debug_args.ini, parts[1])[parts[2]] = KINDS[parts[1]](value)


_TOKEN = re.compile(r'\s*(?:(\{|\}|:)|("(?:[^"\\]|\\.)*")|([A-Za-z_][\w.]*)|([-+0-9.eE]+))')


def _parse(text: str, debug_args: DebugArgs, path: str) -> None:
    """Read protobuf text of `ini { KIND { key: "..." value: ... } ... }` into debug_args."""
    tokens = []
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    position = 0
    while text[position:].strip():
        match = _TOKEN.match(text, position)
        if match is None:
            raise InvalidArgument(f"debug args file {path!r}: cannot read {text[position:position + 20].strip()!r}.")
        tokens.append(next(g for g in match.groups() if g is not None))
        position = match.end()
    items = iter(tokens)
    for field in items:
        if field != "ini" or next(items, None) != "{":
            raise InvalidArgument(f"debug args file {path!r}: field `{field}` is not built here; only `ini` is.",
                                  "Remove it from the file.")
        for kind in items:
            if kind == "}":
                break
            entry = dict(zip(*[iter(_entry(items, kind, path))] * 2))
            getattr(debug_args.ini, kind)[json.loads(entry["key"])] = _value(kind, entry["value"])


def _entry(items, kind: str, path: str) -> list[str]:
    if kind not in KINDS or next(items, None) != "{":
        raise InvalidArgument(f"debug args file {path!r}: `ini.{kind}` is not an INI map (one of {', '.join(KINDS)}).")
    out = []
    for token in items:
        if token == "}":
            return out
        if token != ":":
            out.append(token)
    raise InvalidArgument(f"debug args file {path!r}: `ini.{kind}` is not closed.")


def _value(kind: str, text: str):
    if kind == "bools":
        return text == "true"
    return json.loads(text) if kind == "strings" else KINDS[kind](text)
