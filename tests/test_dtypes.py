"""Element types: every bit pattern of the narrow formats decoded by the format definitions
(OCP 8-bit spec, FNUZ as in the CDNA3 ISA, MX for fp6/fp4) written out here, fp8 FNUZ vs OCP, and
the encode/decode codecs — checked against those definitions and ml_dtypes, never against tilesim."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from tests._refs import INT_RANGE, ML, q_ml
from tilesim.matrix import DTYPES, decode, encode, execute_logical, lookup, quantize


# --------------------------------------------------------------------------- fp8 flavours
def _decode_minifloat(p: int, e_bits: int, m_bits: int, bias: int, kind: str) -> float:
    """Decode a bit pattern by the format definition (OCP 8-bit spec v1.0; FNUZ as in the
    CDNA3 ISA §7.1.3 / LLVM's Float8E4M3FNUZ; MX spec for fp6/fp4). kind: ieee | fn | fnuz."""
    sign = (p >> (e_bits + m_bits)) & 1
    e = (p >> m_bits) & ((1 << e_bits) - 1)
    m = p & ((1 << m_bits) - 1)
    if kind == "fnuz" and p == 1 << (e_bits + m_bits):
        return math.nan  # the only NaN; there is no -0
    if kind == "ieee" and e == (1 << e_bits) - 1:
        return math.nan if m else (-math.inf if sign else math.inf)
    if kind == "fn" and e == (1 << e_bits) - 1 and m == (1 << m_bits) - 1 and e_bits + m_bits == 7:
        return math.nan  # OCP E4M3: S.1111.111
    mag = (m / 2**m_bits) * 2.0 ** (1 - bias) if e == 0 else (1 + m / 2**m_bits) * 2.0 ** (e - bias)
    return -mag if sign else mag


FORMATS = {  # name: (total bits, exponent bits, mantissa bits, bias, kind)
    "fp8_fnuz": (8, 4, 3, 8, "fnuz"),
    "bf8_fnuz": (8, 5, 2, 16, "fnuz"),
    "fp8_ocp": (8, 4, 3, 7, "fn"),
    "bf8_ocp": (8, 5, 2, 15, "ieee"),
    "fp6": (6, 2, 3, 1, "fn"),
    "bf6": (6, 3, 2, 3, "fn"),
    "fp4": (4, 2, 1, 1, "fn"),
}


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_bit_pattern_decodes_by_the_format_definition(name: str) -> None:
    bits, e_bits, m_bits, bias, kind = FORMATS[name]
    pats = np.arange(2**bits, dtype=np.uint64)
    got = decode(pats, name)
    want = np.array([_decode_minifloat(int(p), e_bits, m_bits, bias, kind) for p in pats])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))
    # and ml_dtypes agrees with the definition
    ml = pats.astype(np.uint8).view(ML[name]).astype(np.float64)
    np.testing.assert_array_equal(ml, want)


def test_fp8_max_finite() -> None:
    # Format definitions: FNUZ E4M3 2**7 * 1.875 = 240 (bias 8, 0x7f); OCP E4M3 2**8 * 1.75 = 448
    # (0x7e, since 0x7f is NaN); E5M2 both flavours 2**15 * 1.75 = 57344.
    want = {"fp8_fnuz": (240.0, 0x7F), "fp8_ocp": (448.0, 0x7E), "bf8_fnuz": (57344.0, 0x7F),
            "bf8_ocp": (57344.0, 0x7B)}
    for name, (mx, pattern) in want.items():
        assert float(ml_dtypes.finfo(ML[name]).max) == mx
        assert decode(np.uint64(pattern), name) == mx
        vals = decode(np.arange(256, dtype=np.uint64), name)
        assert np.nanmax(vals[np.isfinite(vals)]) == mx


def test_fnuz_has_no_negative_zero_no_inf_and_nan_is_0x80() -> None:
    for name in ("fp8_fnuz", "bf8_fnuz"):
        vals = decode(np.arange(256, dtype=np.uint64), name)
        assert np.isnan(vals).sum() == 1 and np.isnan(vals[0x80])
        assert not np.isinf(vals).any()
        assert not (np.signbit(vals) & (vals == 0)).any()
        assert int(encode(np.float64(-0.0), name)) == 0x00
        assert int(encode(np.float64(np.nan), name)) == 0x80


def test_ocp_e4m3_nan_patterns_and_no_inf() -> None:
    vals = decode(np.arange(256, dtype=np.uint64), "fp8_ocp")
    assert set(np.flatnonzero(np.isnan(vals))) == {0x7F, 0xFF}
    assert not np.isinf(vals).any()
    assert decode(np.uint64(0x80), "fp8_ocp") == 0.0 and np.signbit(decode(np.uint64(0x80), "fp8_ocp"))
    e5 = decode(np.arange(256, dtype=np.uint64), "bf8_ocp")
    assert e5[0x7C] == np.inf and e5[0xFC] == -np.inf  # OCP E5M2 keeps IEEE infinities


def test_fp8_quantisation_follows_ml_dtypes() -> None:
    # Observed ml_dtypes behaviour, which tilesim adopts for input quantisation: values beyond
    # the largest finite (after rounding) and ±inf become NaN in the no-inf formats (no
    # saturation); OCP E5M2 overflows to ±inf. Below the overflow threshold values round to
    # nearest even.
    vals = np.array([1e6, -1e6, np.inf, -np.inf, 241.0, 247.0, 449.0, 470.0, 3.3, -0.3, 0.0], np.float32)
    for name in ("fp8_fnuz", "bf8_fnuz", "fp8_ocp", "bf8_ocp"):
        want = vals.astype(ML[name]).view(np.uint8).astype(np.uint64)
        np.testing.assert_array_equal(encode(vals.astype(np.float64), name), want, err_msg=name)
    assert np.isnan(quantize(np.float64(1e6), "fp8_ocp")) and np.isnan(quantize(np.float64(np.inf), "fp8_fnuz"))
    assert quantize(np.float64(1e6), "bf8_ocp") == np.inf
    assert quantize(np.float64(241.0), "fp8_fnuz") == 240.0  # within half an ulp of max: rounds


def test_same_bits_mean_different_values_fnuz_vs_ocp() -> None:
    # 0x40: OCP E4M3 (bias 7) is 2.0, FNUZ E4M3 (bias 8) is 1.0 — the gfx942 -> gfx950 port trap.
    assert float(np.uint8(0x40).view(ml_dtypes.float8_e4m3fn)) == 2.0
    assert float(np.uint8(0x40).view(ml_dtypes.float8_e4m3fnuz)) == 1.0
    r942 = lookup("v_mfma_f32_16x16x32_fp8_fp8", "gfx942")
    r950 = lookup("v_mfma_f32_16x16x32_fp8_fp8", "gfx950")
    v942 = decode(np.uint64(0x40), r942.types[0])
    v950 = decode(np.uint64(0x40), r950.types[0])
    assert (v942, v950) == (1.0, 2.0)
    bits = np.full((16, 32), 0x40, np.uint64)
    d942 = execute_logical(r942, decode(bits, r942.types[0]), decode(bits.T, r942.types[1]))
    d950 = execute_logical(r950, decode(bits, r950.types[0]), decode(bits.T, r950.types[1]))
    assert (d942 == 32 * 1.0 * 1.0).all() and (d950 == 32 * 2.0 * 2.0).all()
    # and the RDNA4 and sm_89 fp8 rows read OCP
    assert lookup("v_wmma_f32_16x16x16_fp8_fp8", "gfx1201").types[0] == "fp8_ocp"
    assert lookup("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_89").types[0] == "fp8_ocp"


# --------------------------------------------------------------------------- codecs
REPRESENTATIVE = np.array([0.0, 1.0, -2.5, 3.0, 0.1, -1e-3, 100.0, -7.0, 0.4375, 65504.0, 1e-6], np.float32)


@pytest.mark.parametrize("name", list(DTYPES))
def test_encode_decode_representative_values(name: str) -> None:
    d = DTYPES[name]
    if d.kind in ("int", "uint"):
        lo, hi = INT_RANGE[name]
        vals = np.array([lo, hi, 0, 1, (lo + hi) // 2, hi - 3])
        np.testing.assert_array_equal(decode(encode(vals, name), name), vals)
        # out of range values keep their low bits (two's complement wrap)
        np.testing.assert_array_equal(decode(encode(np.array([hi + 1]), name), name), [lo])
        return
    got = decode(encode(REPRESENTATIVE.astype(np.float64), name), name)
    want = q_ml(REPRESENTATIVE, "f32" if name in ("xf32", "tf32") else name)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", [n for n, d in DTYPES.items() if d.reg_bits <= 16])
def test_every_bit_pattern_round_trips(name: str) -> None:
    d = DTYPES[name]
    pats = np.arange(2**d.reg_bits, dtype=np.uint64)
    v = decode(pats, name)
    again = encode(v, name)
    v2 = decode(again, name)
    nan = np.isnan(v) if d.kind == "float" else np.zeros(v.shape, bool)
    np.testing.assert_array_equal(v2[~nan], v[~nan])
    assert np.isnan(v2[nan]).all()
    np.testing.assert_array_equal(again[~nan], pats[~nan])  # every non-NaN pattern is canonical
    if d.kind == "float" and name in ML:  # decode is ml_dtypes' reading of the bits
        width = np.uint8 if d.reg_bits <= 8 else np.uint16
        with np.errstate(invalid="ignore"):  # signalling NaNs
            np.testing.assert_array_equal(v, pats.astype(width).view(ML[name]).astype(np.float64))


def test_f32_patterns_sampled_round_trip() -> None:
    rng = np.random.default_rng(0)
    pats = rng.integers(0, 2**32, size=4096, dtype=np.uint64)
    v = decode(pats, "f32")
    with np.errstate(invalid="ignore"):  # signalling NaNs
        np.testing.assert_array_equal(v, pats.astype(np.uint32).view(np.float32).astype(np.float64))
    ok = ~np.isnan(v)
    np.testing.assert_array_equal(encode(v, "f32")[ok], pats[ok])


def test_quantisation_of_float64_is_one_rounding() -> None:
    # 1 + 2**-8 is the midpoint between bf16 neighbours 1 and 1 + 2**-7; anything above rounds up.
    # (Rounding to float32 first would drop the 2**-30 and tie to 1.0.)
    x = 1 + 2.0**-8 + 2.0**-30
    assert quantize(np.float64(x), "bf16") == 1 + 2.0**-7
    assert quantize(np.float64(1 + 2.0**-4 + 2.0**-40), "fp8_ocp") == 1.125
    assert quantize(np.float64(1 + 2.0**-4 + 2.0**-40), "fp8_fnuz") == 1.125
    assert quantize(np.float64(1 + 2.0**-3 + 2.0**-40), "bf8_ocp") == 1.25
    assert quantize(np.float64(-(1 + 2.0**-8 + 2.0**-30)), "bf16") == -(1 + 2.0**-7)
    assert quantize(np.float64(1 + 2.0**-8), "bf16") == 1.0  # exact tie: to even
    assert quantize(np.float64(1e300), "bf16") == np.inf


def test_xf32_ignores_low_13_mantissa_bits() -> None:
    # tf32 (PTX ISA §9.7.14) keeps 10 mantissa bits; the low 13 bits of the f32 register are ignored.
    x = np.float32(1 + 2.0**-10 + 2.0**-12)
    assert quantize(np.float64(x), "xf32") == 1 + 2.0**-10
    assert quantize(np.float64(x), "tf32") == 1 + 2.0**-10
    row = lookup("v_mfma_f32_16x16x8_xf32", "gfx942")
    a = np.full((16, 8), float(x))
    b = np.ones((8, 16))
    assert (execute_logical(row, a, b) == 8 * (1 + 2.0**-10)).all()
