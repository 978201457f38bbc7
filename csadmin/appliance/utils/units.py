"""`cerebras.appliance.utils.units`: bytes and times in the units people read (ModelZoo's model
statistics print sizes with bytes_to_human)."""

from __future__ import annotations

_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL = ("B", "KB", "MB", "GB", "TB", "PB")
_BYTES = {**{u: 1 << (10 * i) for i, u in enumerate(_BINARY)}, **{u: 10 ** (3 * i) for i, u in enumerate(_DECIMAL)}}
# Nanoseconds in each time unit.
_TIME = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "m": 6e10, "h": 3.6e12, "d": 8.64e13, "w": 6.048e14,
         "y": 3.154e16}


def convert_byte_unit(num, tgt_unit: str, /, src_unit: str = "B", precision: int = 0):
    """`num` `src_unit`s in `tgt_unit`s, rounded to `precision` places (0: an int)."""
    if precision < 0:
        raise ValueError(f"Invalid precision: {precision}")
    if src_unit not in _BYTES:
        raise ValueError(f"Invalid `src_unit`: {src_unit}")
    if tgt_unit not in _BYTES:
        raise ValueError(f"Invalid `tgt_unit`: {tgt_unit}")
    value = round(float(num * _BYTES[src_unit]) / _BYTES[tgt_unit], precision)
    return int(value) if precision == 0 else value


def bytes_to_human(num, /, fmt: str = "{value:.1f}{unit}", log_base: int = 2) -> str:
    """`num` bytes in the largest unit it reaches (KiB, MiB, ...; KB, MB, ... with log_base 10)."""
    if log_base not in (2, 10):
        raise ValueError(f"Invalid `log_base`: {log_base}")
    units = _BINARY if log_base == 2 else _DECIMAL
    for unit in reversed(units[1:]):
        if num >= _BYTES[unit]:
            return fmt.format(unit=unit, value=float(num) / _BYTES[unit])
    return fmt.format(unit="B", value=num)


def convert_time_unit(num, src_unit: str, tgt_unit: str, precision=None):
    """`num` `src_unit`s in `tgt_unit`s (ns, us, ms, s, m, h, d, w, y), rounded if `precision`."""
    if precision is not None and precision < 0:
        raise ValueError(f"Invalid precision: {precision}")
    for name, unit in (("src_unit", src_unit), ("tgt_unit", tgt_unit)):
        if unit not in _TIME:
            raise ValueError(f"Invalid `{name}`: {unit}")
    value = float(num) * _TIME[src_unit] / _TIME[tgt_unit]
    if precision is not None:
        value = round(value, precision)
        return int(value) if precision == 0 else value
    return value


def time_to_human(num, src_unit: str, fmt: str = "{value:.1f}{unit}") -> str:
    """`num` `src_unit`s in the largest time unit it reaches."""
    if src_unit not in _TIME:
        raise ValueError(f"Invalid `src_unit`: {src_unit}")
    ns = float(num) * _TIME[src_unit]
    for unit in reversed(list(_TIME)[1:]):
        if ns >= _TIME[unit]:
            return fmt.format(unit=unit, value=ns / _TIME[unit])
    return fmt.format(unit="ns", value=ns)
