"""The half formats' rounding (csadmin/cstorch/amp/formats.py), against independent references:
cbfloat16 (1 sign, 6 exponent, 9 mantissa bits, bias 31) against an integer implementation written
here — exact integer arithmetic on float32 bit patterns, no float operation — over every CB16 bit
pattern and every binade's rounding boundaries (every float32 bit pattern and 2^24 random ones:
test_formats_exhaustive.py, too long for the unit tier); float16 and bfloat16 against PyTorch's
conversions."""


import pytest
import torch

from csadmin.cstorch.amp.formats import (FORMATS, cbfloat16_from_bits, cbfloat16_to_bits, round_cbfloat16,
                                         round_cbfloat16_)

CB16_INF, CB16_NAN = 0x7E00, 0x7F00


def reference_cb16(bits: torch.Tensor) -> torch.Tensor:
    """The CB16 pattern nearest (ties to even) to each float32 whose bit pattern is in `bits`
    (int64 holding 0 … 2^32-1): integer arithmetic only."""
    sign = (bits >> 31) & 1
    exp = (bits >> 23) & 0xFF
    man = bits & 0x7FFFFF
    sig = torch.where(exp > 0, man | 0x800000, man)  # value = sig · 2^(max(exp, 1) - 150)
    binade = torch.clamp(exp, min=1) - 127  # the float32 binade (subnormals: below -126)
    # The CB16 quantum is 2^(max(binade, -30) - 9): shift sig right by that exponent minus its own.
    shift = torch.clamp(binade, min=-30) - 9 - (torch.clamp(exp, min=1) - 150)
    shift = torch.clamp(shift, max=40)  # ≥ 25 rounds every float32 to zero already
    q = sig >> shift
    rem = sig - (q << shift)
    half = 1 << (shift - 1)
    q = q + ((rem > half) | ((rem == half) & ((q & 1) == 1))).long()
    # q counts quanta. Subnormal range (binade < -30): the pattern is q (512 is 2^-30, the first
    # normal, whose pattern is 512 too). Normal: field (binade + 31) and mantissa q - 512; q = 1024
    # carries into the next binade by the same addition.
    pattern = torch.where(binade < -30, q, ((binade + 31) << 9) + (q - 512))
    pattern = torch.where(pattern >= CB16_INF, CB16_INF, pattern)  # overflow
    pattern = torch.where(exp == 255, torch.where(man == 0, CB16_INF, CB16_NAN), pattern)
    return pattern | (sign << 15)


def decode_reference(pattern: torch.Tensor) -> torch.Tensor:
    """float32 bit patterns (int64) of CB16 patterns (int64), by integer arithmetic except the
    subnormals' exact m·2^-39."""
    sign = (pattern >> 15) & 1
    field = (pattern >> 9) & 0x3F
    man = pattern & 0x1FF
    normal = ((field - 31 + 127) << 23) | (man << 14)
    tiny = (man.double() * 2.0 ** -39).float().view(torch.int32).long() & 0xFFFFFFFF
    bits = torch.where(field == 0, tiny, normal)
    bits = torch.where(field == 63, torch.where(man == 0, 0x7F800000, 0x7FC00000), bits)
    return bits | (sign << 31)


def all_cb16_patterns() -> torch.Tensor:
    return torch.arange(0, 1 << 16, dtype=torch.int64)


def as_float32(bits: torch.Tensor) -> torch.Tensor:
    """float32 values from bit patterns held in int64 (0 … 2^32-1)."""
    return torch.where(bits >= 2 ** 31, bits - 2 ** 32, bits).to(torch.int32).view(torch.float32)


def check_against_reference(bits: torch.Tensor) -> None:
    """round_cbfloat16 of the float32s `bits` (int64 patterns) is the reference's nearest CB16."""
    x = as_float32(bits)
    got = round_cbfloat16(x).view(torch.int32).long() & 0xFFFFFFFF
    want = decode_reference(reference_cb16(bits))
    nan = torch.isnan(x)
    assert torch.isnan(as_float32(got[nan])).all()  # NaN stays NaN
    bad = (got != want) & ~nan
    if bad.any():
        i = bad.nonzero()[0].item()
        pytest.fail(f"{int(bits[i]):#010x} ({x[i].item()!r}) rounds to {as_float32(got[i:i + 1]).item()!r}, "
                    f"the nearest CB16 is {as_float32(want[i:i + 1]).item()!r} ({bad.sum().item()} such in the chunk)")


def test_every_cb16_pattern_round_trips():
    patterns = all_cb16_patterns()
    values = cbfloat16_from_bits(patterns.to(torch.int32).to(torch.int16))
    nan = torch.isnan(values)
    assert nan.sum().item() == 2 * 511  # exponent field 63 with a non-zero mantissa, either sign
    # Each value is the reference decoder's (bit for bit) and is its own rounding.
    want = decode_reference(patterns)
    got = values.view(torch.int32).long() & 0xFFFFFFFF
    assert torch.equal(got[~nan], want[~nan])
    rounded = round_cbfloat16(values)
    assert torch.equal(rounded.view(torch.int32)[~nan], values.view(torch.int32)[~nan])
    assert torch.isnan(rounded[nan]).all()
    back = cbfloat16_to_bits(values).to(torch.int32) & 0xFFFF
    assert torch.equal(back[~nan].long(), patterns[~nan])
    assert set((back[nan] & 0x7E00).tolist()) == {CB16_INF}  # a NaN pattern stays a NaN pattern
    # The format's landmarks, as the docs state them.
    value = dict(zip(patterns.tolist(), values.tolist()))
    assert value[0x7DFF] == (2 - 2 ** -9) * 2 ** 31 and value[0x0200] == 2 ** -30 and value[0x0001] == 2 ** -39
    assert value[0x7E00] == float("inf") and value[0xFE00] == float("-inf") and value[0x3E00] == 1.0
    assert str(value[0x8000]) == "-0.0"


def test_the_reference_itself_on_landmarks():
    """The integer reference says what the format says (so the exhaustive checks check something)."""
    def ref(x: float) -> int:
        return int(reference_cb16(torch.tensor([x], dtype=torch.float32).view(torch.int32).long() & 0xFFFFFFFF))

    assert ref(1.0) == 0x3E00 and ref(-2.0) == 0xC000
    assert ref(1 + 2 ** -10) == 0x3E00  # a tie: to even (mantissa 0)
    assert ref(1 + 3 * 2 ** -10) == 0x3E02  # a tie: to even (mantissa 2)
    assert ref(1 + 2 ** -10 + 2 ** -20) == 0x3E01  # past the tie: up
    assert ref(1e5) == ((16 + 31) << 9) | round((1e5 / 2 ** 16 - 1) * 512)  # beyond float16's range
    assert ref(4.3e9) == CB16_INF and ref(4.29e9) == 0x7DFF
    assert ref(2 ** -40) == 0 and ref(2 ** -40 + 2 ** -60) == 1 and ref(3 * 2 ** -40) == 2  # subnormal ties
    assert ref(float("inf")) == CB16_INF and ref(float("nan")) == CB16_NAN and ref(-0.0) == 0x8000


def test_every_boundary_of_every_binade():
    """Structured: for each sign, each float32 exponent and each value of the mantissa bits CB16
    keeps there, the low bits at every rounding boundary (0, 1, below the tie, the tie, above it,
    all ones) — in CB16's normal range, its subnormal range and float32's own subnormals."""
    parts = []
    for exp in range(256):
        shift = min(max(-30, max(exp, 1) - 127) - 9 - (max(exp, 1) - 150), 24)
        low = torch.tensor(sorted({0, 1, (1 << (shift - 1)) - 1, 1 << (shift - 1), (1 << (shift - 1)) + 1,
                                   (1 << shift) - 1}), dtype=torch.int64)
        kept = torch.arange(0, 1 << max(23 - shift, 0), dtype=torch.int64) << shift
        mantissas = (kept[:, None] | low[None, :]).reshape(-1) & 0x7FFFFF
        for sign in (0, 1):
            parts.append((sign << 31) | (exp << 23) | mantissas)
    bits = torch.unique(torch.cat(parts))
    assert len(bits) > 900_000
    check_against_reference(bits)


def test_in_place_and_new_agree_and_other_dtypes_go_through_float32():
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=g) * torch.logspace(-14, 12, 1000)
    new = round_cbfloat16(x)
    same = x.clone()
    assert round_cbfloat16_(same) is same and torch.equal(same, new)
    assert torch.equal(round_cbfloat16(x.double()), new) and round_cbfloat16(x.double()).dtype == torch.float32
    assert torch.equal(round_cbfloat16(torch.tensor([70000], dtype=torch.int64)), torch.tensor([70016.0]))


@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_float16_and_bfloat16_round_as_pytorch_converts(name):
    fmt = FORMATS[name]
    g = torch.Generator().manual_seed(2)
    x = torch.randn(100_000, generator=g) * torch.logspace(-45, 38, 100_000)
    x = torch.cat([x, torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 65519.0, 65520.0])])
    want = x.to(fmt.proxy).to(torch.float32)
    number = ~torch.isnan(x)
    got = fmt.round(x)
    assert got.dtype == torch.float32 and torch.isnan(got[~number]).all()
    assert torch.equal(got[number].view(torch.int32), want[number].view(torch.int32))  # -0.0 and infinities too
    y = x.clone()
    assert fmt.round_(y) is y and torch.equal(y[number].view(torch.int32), want[number].view(torch.int32))
    assert fmt.visible == fmt.proxy
