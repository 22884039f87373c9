"""Single VALU instructions of the ISA emulator against the AMD ISA guides' pseudocode, on edge inputs.

Every expectation is computed here in Python integers from the guide's description (quoted per test:
the RDNA3 ISA reference guide, chapter "Instructions" / VOP2-VOP3 opcodes; the CDNA3 "MI300" ISA guide
§12 for the gfx9 carry forms), never from tilesim. Each runs one line through ``tests/_isa_harness.run``.
"""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tests._isa_harness import run

M32 = (1 << 32) - 1


def _u(st, reg: int, n: int) -> list[int]:
    return [int(x) for x in st.v[reg][0][:n]]


def _lanes(vals: list[int], wave: int = 32) -> np.ndarray:
    return np.resize(np.array(vals, np.uint64), wave)


# (S0, S1 offset, S2 width): offsets/widths above 31 (the guide reads only bits [4:0]), width 0,
# fields running past bit 31, a full 31-bit field, sign bit set and clear in the field.
BFE = [(0xF0F0F0F0, 4, 8), (0x80000000, 31, 1), (0x80000000, 31, 5), (0xDEADBEEF, 36, 40),
       (0xDEADBEEF, 0, 0), (0xDEADBEEF, 7, 32), (0xFFFFFFFF, 1, 31), (0x7FFFFFFF, 0, 31),
       (0x00000800, 8, 4), (0x00000400, 8, 4), (0x12345678, 28, 8)]


def _bfe_ref(s0: int, s1: int, s2: int, signed: bool) -> int:
    # RDNA3 V_BFE_U32: D0.u32 = ((S0.u32 >> S1[4:0].u32) & ((1U << S2[4:0].u32) - 1U))
    # RDNA3 V_BFE_I32: tmp.i32 = ((S0.i32 >> S1[4:0].u32) & ((1 << S2[4:0].u32) - 1));
    #                  D0.i32 = signext_from_bit(tmp.i32, S2[4:0].u32)
    off, width = s1 & 31, s2 & 31
    field = (s0 >> off) & ((1 << width) - 1)
    if signed and width and field >> (width - 1) & 1:
        field -= 1 << width
    return field & M32


@pytest.mark.parametrize("signed", [False, True])
def test_bfe_reads_five_bits_of_offset_and_width_and_sign_extends_from_the_field_top(signed: bool) -> None:
    m = "v_bfe_i32" if signed else "v_bfe_u32"
    st = run("gfx1100", f"\t{m} v3, v0, v1, v2",
             {0: _lanes([a for a, _, _ in BFE]), 1: _lanes([b for _, b, _ in BFE]), 2: _lanes([c for *_, c in BFE])})
    assert _u(st, 3, len(BFE)) == [_bfe_ref(a, b, c, signed) for a, b, c in BFE]


ALIGN = [(0x01234567, 0x89ABCDEF, s) for s in (0, 1, 8, 16, 31, 32, 33, 40, 63)]


def test_alignbit_shifts_the_64_bit_pair_by_five_bits_of_s2() -> None:
    # RDNA3 V_ALIGNBIT_B32: D0.u32 = 32'U(({ S0.u32, S1.u32 } >> S2.u32[4:0]) & 0xffffffffLL)
    st = run("gfx942", "\tv_alignbit_b32 v3, v0, v1, v2",
             {0: _lanes([a for a, _, _ in ALIGN], 64), 1: _lanes([b for _, b, _ in ALIGN], 64),
              2: _lanes([s for *_, s in ALIGN], 64)})
    assert _u(st, 3, len(ALIGN)) == [(((a << 32) | b) >> (s & 31)) & M32 for a, b, s in ALIGN]


U24 = [(0xFF000003, 0xAB000005, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF, 0x12345678), (0x00FFFFFF, 2, 0),
       (0x01000000, 0x7F000000, 9)]


def test_u24_multiplies_ignore_the_top_byte_and_wrap_to_32_bits() -> None:
    # RDNA3 V_MUL_U32_U24: D0.u32 = 32'U(S0.u24) * 32'U(S1.u24)
    # RDNA3 V_MAD_U32_U24: D0.u32 = 32'U(S0.u24) * 32'U(S1.u24) + S2.u32
    st = run("gfx1201", "\tv_mul_u32_u24_e32 v3, v0, v1\n\tv_mad_u32_u24 v4, v0, v1, v2",
             {0: _lanes([a for a, _, _ in U24]), 1: _lanes([b for _, b, _ in U24]), 2: _lanes([c for *_, c in U24])})
    prod = [(a & 0xFFFFFF) * (b & 0xFFFFFF) for a, b, _ in U24]
    assert _u(st, 3, len(U24)) == [p & M32 for p in prod]
    assert _u(st, 4, len(U24)) == [(p + c) & M32 for p, (_, _, c) in zip(prod, U24)]


BORROW = [(5, 3, 0), (5, 5, 1), (5, 5, 0), (0, 0, 1), (0, M32, 1), (M32, M32, 1), (3, 5, 0), (M32, 0, 1)]


@pytest.mark.parametrize("rev", [False, True])
def test_gfx9_subtract_with_borrow_in_and_out(rev: bool) -> None:
    # CDNA3 V_SUBB_CO_U32:    D.u = S0.u - S1.u - VCC[lane]; VCC[lane] = (S1.u + VCC[lane] > S0.u)
    # CDNA3 V_SUBBREV_CO_U32: D.u = S1.u - S0.u - VCC[lane]; VCC[lane] = (S0.u + VCC[lane] > S1.u)
    m = "v_subbrev_co_u32_e64" if rev else "v_subb_co_u32_e64"
    cases = (BORROW * 8)[:64]  # every lane, so the whole 64-bit carry-out mask is checked
    ci = sum(c << i for i, (_, _, c) in enumerate(cases))
    st = run("gfx942", f"\t{m} v3, s[10:11], v0, v1, s[12:13]",
             {0: _lanes([a for a, _, _ in cases], 64), 1: _lanes([b for _, b, _ in cases], 64)},
             s={12: ci & M32, 13: ci >> 32})
    want, co = [], 0
    for i, (a, b, c) in enumerate(cases):
        x, y = (b, a) if rev else (a, b)
        want.append((x - y - c) & M32)
        co |= int(y + c > x) << i
    assert _u(st, 3, 64) == want
    assert int(st.s[10][0]) | (int(st.s[11][0]) << 32) == co


def _f32_to_f16_rne(bits: int) -> int:
    """IEEE 754 binary32 -> binary16, round to nearest, ties to even, from the format spec in integers."""
    sign, exp, man = bits >> 31, (bits >> 23) & 0xFF, bits & 0x7FFFFF
    if exp == 0xFF:
        return (sign << 15) | 0x7C00 | (0x200 if man else 0)  # inf, or the quiet NaN
    # value = m * 2**e exactly, m an integer
    m, e = ((man | 0x800000), exp - 150) if exp else (man, -149)
    if m == 0:
        return sign << 15
    # f16: subnormal quantum 2**-24; normal numbers have 11 significant bits
    top = m.bit_length() + e  # value in [2**(top-1), 2**top)
    q = max(top - 11, -24)  # the f16 quantum exponent for this magnitude
    num, sh = m, q - e
    if sh > 0:
        r, rem, half = num >> sh, num & ((1 << sh) - 1), 1 << (sh - 1)
        r += (rem > half) or (rem == half and r & 1)
    else:
        r = num << -sh
    val_exp = q  # result = r * 2**q
    if r == 1 << 11:  # rounding carried into the next binade
        r, val_exp = r >> 1, val_exp + 1
    if r >= 1 << 10:  # normal: biased exponent = (val_exp + 10) + 15
        be = val_exp + 10 + 15
        if be >= 31:
            return (sign << 15) | 0x7C00
        return (sign << 15) | (be << 10) | (r & 0x3FF)
    return (sign << 15) | r  # subnormal (q == -24)


def _b(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


F16_EDGES = [_b(v) for v in (1.0, 1 + 2**-11, 1 + 3 * 2**-11, 1 + 2**-11 + 2**-23, 65504.0, 65519.0, 65519.99,
                              65520.0, 2.0**16, 2**-24, 2**-25, 2**-25 + 2**-48, 3 * 2**-25, 2**-14 - 2**-25,
                              2**-14 - 2**-26, 1e-40, -0.0, -65520.0, float("inf"), 2049.0, 2051.0, 6.1e-5)] \
    + [0x00000001, 0x7FC00000, 0xFFC00000]


def test_cvt_f16_f32_rounds_to_nearest_even_with_overflow_to_inf_and_subnormals() -> None:
    # RDNA3 V_CVT_F16_F32: D0.f16 = f32_to_f16(S0.f32), rounding per MODE.round (the kernel's default:
    # round to nearest even) with f16 denormals kept (MODE.fp_denorm for f16 defaults to on).
    vals = _lanes(F16_EDGES)
    st = run("gfx1201", "\tv_cvt_f16_f32_e32 v3, v0", {0: vals, 3: np.zeros(32)})
    assert [x & 0xFFFF for x in _u(st, 3, len(F16_EDGES))] == [_f32_to_f16_rne(b) for b in F16_EDGES]


CVT_I = [_b(v) for v in (-0.5, -1.5, 2.5, 2.0**31, -(2.0**31), -(2.0**31) - 256.0, 2.0**32, 4294967040.0,
                         -1.0, 1e30, -1e30, float("inf"), float("-inf"))] + [0x7FC00000, 0xFFC00000, 0x00000001]


def _trunc_sat(bits: int, lo: int, hi: int) -> int:
    if (bits >> 23) & 0xFF == 0xFF and bits & 0x7FFFFF:
        return 0
    x = struct.unpack("<f", struct.pack("<I", bits))[0]
    if x in (float("inf"), float("-inf")):
        return hi if x > 0 else lo
    return min(max(int(x), lo), hi)  # int() truncates toward zero, exactly for a float


def test_cvt_to_integers_truncate_saturate_and_send_nan_to_zero() -> None:
    # RDNA3 V_CVT_I32_F32: D0.i32 = f32_to_i32(S0.f32); V_CVT_U32_F32: D0.u32 = f32_to_u32(S0.f32);
    # the guide's conversion notes: round toward zero, out-of-range results saturate, NaN gives 0.
    st = run("gfx1100", "\tv_cvt_i32_f32_e32 v3, v0\n\tv_cvt_u32_f32_e32 v4, v0", {0: _lanes(CVT_I)})
    assert _u(st, 3, len(CVT_I)) == [_trunc_sat(b, -2**31, 2**31 - 1) & M32 for b in CVT_I]
    assert _u(st, 4, len(CVT_I)) == [_trunc_sat(b, 0, M32) for b in CVT_I]


def test_the_f16_reference_agrees_with_numpy_on_random_patterns() -> None:
    """The integer reference above is itself checked against an independent IEEE implementation."""
    bits = np.random.default_rng(3).integers(0, 2**32, 4000, dtype=np.uint64).astype(np.uint32)
    bits = bits[~np.isnan(bits.view(np.float32))]  # numpy keeps NaN payloads; the reference gives the quiet NaN
    with np.errstate(over="ignore"):
        want = bits.view(np.float32).astype(np.float16).view(np.uint16)
    assert [_f32_to_f16_rne(int(b)) for b in bits] == [int(w) for w in want]
