"""CB16 rounding (csadmin/cstorch/amp/formats.py) over every float32 bit pattern and 2^24 random
ones, against the integer reference of test_formats.py. Not in the unit tier (tests/conftest.py):
2^32 patterns take 20-40 s of one core, more than `make test-fast` has for the whole tier; the
full suite runs them, and test_formats.py keeps the structured checks of every binade's rounding
boundaries in the unit tier."""

import pytest
import torch

from csadmin.cstorch.amp.formats import round_cbfloat16_
from tests.cstorch.amp.test_formats import check_against_reference

CHUNK = 1 << 24


def test_random_float32s():
    g = torch.Generator().manual_seed(30)
    bits = torch.randint(0, 1 << 32, (CHUNK,), generator=g, dtype=torch.int64)
    check_against_reference(bits)


def test_every_float32_rounds_to_the_nearest_cb16():
    """Exhaustive: all 2^32 float32 bit patterns, a binade (sign, exponent) at a time, in slices
    that stay in the cache. Within a binade the reference's shift is one number, so it is a few
    integer passes: the significand rounded to a whole number of CB16 quanta, ties to even, by the
    integer idiom (sig + 2^(shift-1) - 1 + its kept lowest bit) >> shift, and the value built back
    as float32 bits by integer arithmetic (CB16's subnormals, q·2^-39, by an exact float product)."""
    piece = 1 << 20
    offsets = torch.arange(0, piece, dtype=torch.int32)
    x, got, q = (torch.empty(piece, dtype=torch.int32) for _ in range(3))
    for exp in range(256):
        sig0 = 0x800000 if exp > 0 else 0
        binade = max(exp, 1) - 127
        shift = min(max(binade, -30) - 9 - (max(exp, 1) - 150), 25)
        for sign in (0, 1):
            top = (exp << 23) - (sign << 31)  # the pattern's sign and exponent bits, as an int32
            for start in range(0, 1 << 23, piece):
                torch.add(offsets, top + start, out=x)
                got.copy_(x)
                round_cbfloat16_(got.view(torch.float32))
                if exp == 255:  # infinities stay, NaNs stay NaN
                    assert torch.isnan(got[1:].view(torch.float32)).all() and (start > 0 or got[0] == top)
                    continue
                sig = torch.add(offsets, start + sig0, out=q)  # the significand
                want = torch.bitwise_right_shift(sig, shift).bitwise_and_(1).add_(sig).add_((1 << (shift - 1)) - 1)
                want.bitwise_right_shift_(shift)  # whole quanta, to nearest, ties to even
                if binade < -30:  # CB16's subnormal range: q · 2^-39, exact in float32
                    want = (want.float() * 2.0 ** -39).view(torch.int32)
                else:  # (binade + 31, q - 512) as CB16's exponent field and mantissa, as float32 bits
                    want.bitwise_left_shift_(14).add_(((((binade + 31) << 9) - 512) << 14) + (96 << 23))
                    if binade >= 31:  # CB16's overflow: 2^32 and beyond are inf
                        want.clamp_(max=0x7F800000)
                        want[want >= 159 << 23] = 0x7F800000
                if sign:
                    want.bitwise_or_(-(1 << 31))
                if not torch.equal(got, want):
                    i = (got != want).nonzero()[0].item()
                    pytest.fail(f"{int(x[i]) & 0xFFFFFFFF:#010x} ({x[i:i + 1].view(torch.float32).item()!r}) "
                                f"rounds to {got[i:i + 1].view(torch.float32).item()!r}, the nearest CB16 is "
                                f"{want[i:i + 1].view(torch.float32).item()!r}")
