"""The system's three half-precision formats, and rounding a float32 tensor to each.

    fmt = FORMATS["cbfloat16"]
    y = fmt.round(x)        # a new float32 tensor: x rounded to CB16 (x itself untouched)
    fmt.round_(y)           # in place

Every format rounds to nearest, ties to even, keeps subnormals, overflows to ±inf and keeps NaN
(as NaN), exactly as a conversion to the format and back would. A rounded value is held in a
float32 *carrier*: float16 and bfloat16 values are exact in float32, and so are CB16's (its 10
significant bits and exponents -39…31 fit float32's 24 and -149…127).

| format | sign, exponent, mantissa bits | bias | largest finite | smallest normal | smallest subnormal |
|---|---|---|---|---|---|
| float16 (IEEE binary16) | 1, 5, 10 | 15 | 65504 | 2^-14 ≈ 6.1e-5 | 2^-24 ≈ 6.0e-8 |
| bfloat16 | 1, 8, 7 | 127 | ≈ 3.39e38 | 2^-126 ≈ 1.2e-38 | 2^-133 ≈ 9.2e-41 |
| cbfloat16 (Cerebras CB16) | 1, 6, 9 | 31 | (2 - 2^-9)·2^31 ≈ 4.29e9 | 2^-30 ≈ 9.3e-10 | 2^-39 ≈ 1.8e-12 |

float16 and bfloat16 round with PyTorch's own conversions (`x.to(dtype)`, round to nearest
even). CB16 has no torch dtype; `round_cbfloat16` does it with float32 arithmetic: adding then
subtracting 1.5·2^(e+14), where 2^e is x's binade clamped to CB16's [2^-30, 2^31], makes the
float32 adder round x to a multiple of 2^(e-9), the CB16 quantum of that binade (below 2^-30
the subnormal quantum 2^-39), ties to even; a result of magnitude 2^32 or more is CB16's
overflow, made ±inf by scaling it past float32's range and back; a zero keeps x's sign. Eight or
nine passes over the tensor, no branch; tests/cstorch/amp/test_formats.py checks it against an
integer implementation on every float32 bit pattern.

`cbfloat16_to_bits` / `cbfloat16_from_bits` convert between CB16 values (float32 carriers) and
their 16-bit patterns (int16 tensors), for tools that store or compare CB16 as bits.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

_EXP_FIELD = 0x7F800000  # float32's exponent bits
_CB16_LOW = (127 - 30) << 23  # the exponent field of 2^-30, CB16's smallest normal binade
_CB16_HIGH = (127 + 31) << 23  # of 2^31, its largest
_MAGIC = (14 << 23) | (1 << 22)  # turns the exponent field of 2^e into 1.5·2^(e+14)
_PAST_RANGE = 2.0 ** 96  # 2^32 · 2^96 = 2^128: past float32's largest finite, so inf
_SIGN_BIT = -(2 ** 31)  # float32's sign bit, as an int32
_PIECE = 1 << 18  # elements rounded at a time (_pieces)


def _pieces(*tensors: torch.Tensor):
    """Matching pieces of tensors of one shape, to round a piece at a time: on a CPU, pieces of
    _PIECE elements when they are contiguous (a rounding's temporaries are then ¼–1 MiB, which the
    allocator reuses, where a whole 4 MiB tensor's come fresh from the kernel, page-faulted:
    measured 2.4 ms against 0.9 ms for a million CB16 roundings); else whole."""
    first = tensors[0]
    if first.device.type == "cpu" and first.numel() > _PIECE and all(t.is_contiguous() for t in tensors):
        return zip(*(t.view(-1).split(_PIECE) for t in tensors))
    return [tensors]


def _magic(x: torch.Tensor) -> torch.Tensor:
    """1.5·2^(e+14) for each element of `x` (float32), 2^e its binade clamped to CB16's."""
    magic = torch.bitwise_and(x.view(torch.int32), _EXP_FIELD)
    return magic.clamp_(_CB16_LOW, _CB16_HIGH).add_(_MAGIC).view(torch.float32)


def round_cbfloat16_(x: torch.Tensor) -> torch.Tensor:
    """Round `x` (float32) to the nearest CB16 value, ties to even, in place; returns `x`."""
    for (part,) in _pieces(x):
        magic = _magic(part)
        # The additions lose the sign of a result that rounds to zero (-1e-13 → -0): it is x's.
        sign = torch.bitwise_and(part.view(torch.int32), _SIGN_BIT)
        part.add_(magic).sub_(magic)
        part.mul_(_PAST_RANGE).mul_(1.0 / _PAST_RANGE)  # |x| ≥ 2^32 (CB16's overflow) becomes ±inf
        part.view(torch.int32).bitwise_or_(sign)
    return x


def round_cbfloat16(x: torch.Tensor) -> torch.Tensor:
    """`x` (any real dtype) rounded to CB16, as a new float32 tensor. (From float64 the rounding
    goes through float32; with 24 bits against CB16's 10 that double rounding is exact.)"""
    if x.dtype != torch.float32:
        return round_cbfloat16_(x.to(torch.float32))
    out = torch.empty_like(x)
    for part, into in _pieces(x, out):
        magic = _magic(part)
        torch.add(part, magic, out=into).sub_(magic)
        into.mul_(_PAST_RANGE).mul_(1.0 / _PAST_RANGE)
        torch.copysign(into, part, out=into)
    return out


def _round_by(dtype: torch.dtype, x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """`x` rounded to `dtype` by PyTorch's conversion, into the float32 tensor `out` (x itself or a new one)."""
    for part, into in _pieces(x, out):
        into.copy_(part.to(dtype))
    return out


def round_float16(x: torch.Tensor) -> torch.Tensor:
    """`x` rounded to float16 (PyTorch's conversion), as a new float32 tensor."""
    return _round_by(torch.float16, x, torch.empty_like(x, dtype=torch.float32))


def round_float16_(x: torch.Tensor) -> torch.Tensor:
    """Round `x` (float32) to float16 in place; returns `x`."""
    return _round_by(torch.float16, x, x)


def round_bfloat16(x: torch.Tensor) -> torch.Tensor:
    """`x` rounded to bfloat16 (PyTorch's conversion), as a new float32 tensor."""
    return _round_by(torch.bfloat16, x, torch.empty_like(x, dtype=torch.float32))


def round_bfloat16_(x: torch.Tensor) -> torch.Tensor:
    """Round `x` (float32) to bfloat16 in place; returns `x`."""
    return _round_by(torch.bfloat16, x, x)


def cbfloat16_to_bits(x: torch.Tensor) -> torch.Tensor:
    """The CB16 bit patterns (int16) of the float32 values `x`, each rounded to CB16 first; NaN
    becomes 0x7F00 (0xFF00 with the sign bit)."""
    y = round_cbfloat16(x.to(torch.float32))
    bits = y.view(torch.int32)
    sign = (bits >> 16) & 0x8000
    magnitude = torch.abs(y)
    normal = ((((bits >> 23) & 0xFF) - 127 + 31) << 9) | ((bits >> 14) & 0x1FF)
    subnormal = (magnitude * 2.0 ** 39).to(torch.int32)  # exact: a multiple of 2^-39 below 2^-30
    pattern = torch.where(magnitude >= 2.0 ** -30, normal, subnormal)
    pattern = torch.where(torch.isinf(y), 0x7E00, pattern)
    pattern = torch.where(torch.isnan(y), 0x7F00, pattern)
    return (pattern | sign).to(torch.int16)


def cbfloat16_from_bits(bits: torch.Tensor) -> torch.Tensor:
    """The float32 values of CB16 bit patterns (an int16 tensor)."""
    b = bits.to(torch.int32) & 0xFFFF
    sign = torch.where((b & 0x8000) != 0, -1.0, 1.0)
    exponent = (b >> 9) & 0x3F
    mantissa = (b & 0x1FF).to(torch.float32)
    normal = torch.ldexp(1.0 + mantissa / 512.0, exponent - 31)
    value = torch.where(exponent == 0, mantissa * 2.0 ** -39, normal)
    value = torch.where(exponent == 63, torch.where(mantissa == 0, torch.inf, torch.nan), value)
    return (sign * value).to(torch.float32)


@dataclass(frozen=True)
class HalfFormat:
    """One half-precision format: its name in the API, the torch dtype that stands for it in a
    captured program (`proxy`: autocast casts to it), the dtype a step hands back a value of it
    in (`visible`), and its roundings of a tensor (`round`: into a new float32 tensor; `round_`: a
    float32 tensor in place). Plain functions, so that a program's generated code can call them."""

    name: str
    proxy: torch.dtype
    visible: torch.dtype
    round: Callable[[torch.Tensor], torch.Tensor]
    round_: Callable[[torch.Tensor], torch.Tensor]


FORMATS = {
    "float16": HalfFormat("float16", torch.float16, torch.float16, round_float16, round_float16_),
    "bfloat16": HalfFormat("bfloat16", torch.bfloat16, torch.bfloat16, round_bfloat16, round_bfloat16_),
    # No torch dtype holds CB16: float16 stands for it in the program (as in the vendor's own
    # API), and its values travel, and reach the user, in float32.
    "cbfloat16": HalfFormat("cbfloat16", torch.float16, torch.float32, round_cbfloat16, round_cbfloat16_),
}
