"""Numerics of matrix instructions: ``execute_logical`` and the dtype codecs.

Every expected value here comes from outside tilesim:

* inputs are quantised by ml_dtypes / numpy casts from float32 values (a single rounding, since
  ml_dtypes converts float32 directly), or are raw bit patterns decoded by the format definitions
  written out below;
* products and sums are exact (Python integers scaled by 2**S, every input being a dyadic
  rational), then rounded once to the accumulator format by :func:`round_once`: the exact value is
  rounded to odd at a precision at least two bits wider than the target and then cast by
  numpy/ml_dtypes with round-to-nearest-even. Rounding to odd first makes the second rounding the
  correct single rounding (Boldo & Melquiond, IEEE TC 2008), so there is no double-rounding error;
  ``test_round_once_is_a_single_rounding`` shows it on midpoint cases where a plain
  ``np.float32(float(q))`` would be wrong;
* integers: numpy int64 products, then two's-complement wrap to 32 bits;
* modifier semantics from the ISA guides and LLVM (named at each test).
"""

from __future__ import annotations

import math
import struct
import zlib
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tilesim.errors import InstructionError, ModifierError
from tests._refs import INT_RANGE, q_ml
from tilesim.matrix import execute_logical, lookup

# --------------------------------------------------------------------------- reference
def _round_to_odd(q: Fraction, ftype: type, utype: type) -> np.floating:
    """``q`` rounded to odd in ``ftype``: exact if representable, else the neighbour toward zero
    with its last bit forced to 1. Only needs ``ftype(float(q))`` to be *a* neighbour of ``q``."""
    t = ftype(float(q))
    if Fraction(float(t)) != q:
        if abs(Fraction(float(t))) > abs(q):
            t = np.nextafter(t, ftype(0))
        t = np.array(t, ftype).view(utype) | utype(1)
        t = t.view(ftype)[()]
    return t


def round_once(q: Fraction, fmt: str) -> float:
    """The exact rational ``q`` rounded once, to nearest-even, to ``fmt``."""
    if fmt == "f64":
        return float(q)  # CPython's int/int true division is correctly rounded
    if fmt == "f32":
        return float(np.float32(_round_to_odd(q, np.float64, np.uint64)))  # 53 >= 24 + 2
    if fmt == "f16":
        with np.errstate(over="ignore"):  # overflow to inf is the answer
            return float(np.float16(_round_to_odd(q, np.float64, np.uint64)))  # numpy: f64 -> f16 directly
    if fmt == "bf16":  # ml_dtypes rounds float32 -> bf16 directly; 24 >= 8 + 2
        return float(ml_dtypes.bfloat16(_round_to_odd(q, np.float32, np.uint32)))
    raise AssertionError(fmt)


S = 2400  # every value here is a multiple of 2**-S: f64 inputs above 2**-1000, products above 2**-2000


def _scaled(x: float) -> int:
    n, d = float(x).as_integer_ratio()
    return n << (S - (d.bit_length() - 1))


def ref_float(A: np.ndarray, B: np.ndarray, C: np.ndarray, acc: str) -> np.ndarray:
    """Exact ``A @ B + C`` per block on already-quantised finite inputs, rounded once to ``acc``."""
    nb, m, _ = A.shape
    n = B.shape[2]
    out = np.empty((nb, m, n))
    to_int = np.vectorize(_scaled, otypes=[object])
    for blk in range(nb):
        exact = to_int(A[blk]) @ to_int(B[blk]) + to_int(C[blk]) * (1 << S)  # scaled by 2**(2S)
        for i in range(m):
            for j in range(n):
                out[blk, i, j] = round_once(Fraction(exact[i, j], 1 << (2 * S)), acc)
    return out


def ref_int(A: np.ndarray, B: np.ndarray, C: np.ndarray) -> np.ndarray:
    d = np.einsum("bmk,bkn->bmn", A.astype(np.int64), B.astype(np.int64)) + C.astype(np.int64)
    return (d + 2**31) % 2**32 - 2**31


def _inputs(rng: np.random.Generator, t: str, shape: tuple[int, ...]) -> np.ndarray:
    if t in INT_RANGE:
        lo, hi = INT_RANGE[t]
        return rng.integers(lo, hi + 1, size=shape)
    scale = {"fp8_fnuz": 8.0, "bf8_fnuz": 64.0, "fp8_ocp": 8.0, "bf8_ocp": 64.0}.get(t, 1.0)
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def test_round_once_is_a_single_rounding() -> None:
    # Hand-derived: each q sits just above a midpoint of the target format, where rounding
    # first to float64 (or float32) lands exactly on the midpoint and ties-to-even goes down.
    one = Fraction(1)
    cases = [
        (one + Fraction(1, 2**24) + Fraction(1, 2**80), "f32", 1 + 2.0**-23),
        (one + Fraction(1, 2**11) + Fraction(1, 2**80), "f16", 1 + 2.0**-10),
        (one + Fraction(1, 2**8) + Fraction(1, 2**40), "bf16", 1 + 2.0**-7),
        (one + Fraction(1, 2**24), "f32", 1.0),  # exact tie: to even
        (-(one + Fraction(3, 2**24)), "f32", -(1 + 2.0**-22)),  # tie between odd/even: to even
        (Fraction(65519), "f16", 65504.0),
        (Fraction(65520), "f16", math.inf),  # IEEE: at the overflow midpoint RNE goes to inf
    ]
    for q, fmt, want in cases:
        assert round_once(q, fmt) == want, (q, fmt)
    assert float(np.float32(float(cases[0][0]))) == 1.0  # the naive way is wrong here


# --------------------------------------------------------------------------- rows
# (mnemonic, arch, expected (A, B, C, D) types from the mnemonic and the target's fp8 flavour)
FLOAT_ROWS = [
    ("v_mfma_f32_32x32x8f16", "gfx90a", ("f16", "f16", "f32", "f32")),
    ("v_wmma_f32_16x16x16_f16", "gfx1100", ("f16", "f16", "f32", "f32")),
    ("v_wmma_f32_16x16x16_f16", "gfx1201", ("f16", "f16", "f32", "f32")),
    ("v_wmma_f16_16x16x16_f16", "gfx1100", ("f16", "f16", "f16", "f16")),
    ("v_mfma_f32_32x32x8bf16_1k", "gfx90a", ("bf16", "bf16", "f32", "f32")),
    ("v_mfma_f32_16x16x16_bf16", "gfx942", ("bf16", "bf16", "f32", "f32")),
    ("v_wmma_bf16_16x16x16_bf16", "gfx1201", ("bf16", "bf16", "bf16", "bf16")),
    ("v_wmma_bf16f32_16x16x32_bf16", "gfx1250", ("bf16", "bf16", "f32", "bf16")),
    ("v_mfma_f32_32x32x2f32", "gfx90a", ("f32", "f32", "f32", "f32")),
    ("v_wmma_f32_16x16x4_f32", "gfx1250", ("f32", "f32", "f32", "f32")),
    ("v_mfma_f64_16x16x4f64", "gfx90a", ("f64", "f64", "f64", "f64")),
    ("v_mfma_f64_4x4x4_4b_f64", "gfx942", ("f64", "f64", "f64", "f64")),
    ("v_mfma_f32_16x16x8_xf32", "gfx942", ("xf32", "xf32", "f32", "f32")),
    ("v_mfma_f32_32x32x1f32", "gfx90a", ("f32", "f32", "f32", "f32")),  # 2 blocks
    ("v_mfma_f32_4x4x4f16", "gfx908", ("f16", "f16", "f32", "f32")),  # 16 blocks
    ("v_mfma_f32_16x16x32_fp8_fp8", "gfx942", ("fp8_fnuz", "fp8_fnuz", "f32", "f32")),
    ("v_mfma_f32_16x16x32_bf8_fp8", "gfx942", ("bf8_fnuz", "fp8_fnuz", "f32", "f32")),
    ("v_mfma_f32_16x16x32_fp8_fp8", "gfx950", ("fp8_ocp", "fp8_ocp", "f32", "f32")),
    ("v_mfma_f32_16x16x32_bf8_bf8", "gfx950", ("bf8_ocp", "bf8_ocp", "f32", "f32")),
    ("v_wmma_f32_16x16x16_fp8_bf8", "gfx1201", ("fp8_ocp", "bf8_ocp", "f32", "f32")),
    ("v_wmma_f16_16x16x64_fp8_fp8", "gfx1250", ("fp8_ocp", "fp8_ocp", "f16", "f16")),
    ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_80", ("f16", "f16", "f32", "f32")),
    ("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16", "sm_86", ("f16", "f16", "f16", "f16")),
    ("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", "sm_90", ("bf16", "bf16", "f32", "f32")),
    ("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "sm_80", ("tf32", "tf32", "f32", "f32")),
    ("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64", "sm_80", ("f64", "f64", "f64", "f64")),
    ("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32", "sm_89", ("fp8_ocp", "fp8_ocp", "f32", "f32")),
]
INT_ROWS = [
    ("v_mfma_i32_32x32x8i8", "gfx90a", ("i8", "i8", "i32", "i32")),
    ("v_mfma_i32_16x16x32_i8", "gfx942", ("i8", "i8", "i32", "i32")),
    ("v_mfma_i32_32x32x4_2b_i8", "gfx942", ("i8", "i8", "i32", "i32")),  # 2 blocks
    ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", "sm_80", ("i8", "i8", "i32", "i32")),
    ("mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32", "sm_90", ("u8", "u8", "i32", "i32")),
]


def _shapes(row: object) -> tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]:
    nb, m, n, k = row.blocks, row.m, row.n, row.k  # type: ignore[attr-defined]
    return (nb, m, k), (nb, k, n), (nb, m, n)


@pytest.mark.parametrize("mnemonic, arch, types", FLOAT_ROWS, ids=[f"{a}:{m}" for m, a, _ in FLOAT_ROWS])
def test_float_rows_match_exact_reference(mnemonic: str, arch: str, types: tuple[str, ...]) -> None:
    row = lookup(mnemonic, arch)
    assert row.types == types
    ta, tb, tc, td = types
    rng = np.random.default_rng(zlib.crc32(f"{mnemonic}@{arch}".encode()))  # stable across runs
    sa, sb, sc = _shapes(row)
    a, b, c = _inputs(rng, ta, sa), _inputs(rng, tb, sb), _inputs(rng, tc, sc)
    if tc == "f64":  # use the whole f64 mantissa, not float32 values
        a, b, c = (x.astype(np.float64) * (1 + 2.0**-40) for x in (a, b, c))
        qa, qb, qc = a, b, c
    else:
        qa, qb, qc = q_ml(a, ta), q_ml(b, tb), q_ml(c, tc)
    got = execute_logical(row, a, b, c)
    assert got.shape == sc
    want = ref_float(qa, qb, qc, td)
    np.testing.assert_array_equal(got, want)
    # 2-D in, 2-D out when there is one block
    if row.blocks == 1:
        assert execute_logical(row, a[0], b[0], c[0]).shape == sc[1:]


def test_rounding_matters_for_the_reference() -> None:
    # Guard against a vacuous comparison: for f16 inputs with an f32 accumulator, the exact sum
    # is usually not an f32 value, so the single rounding is really exercised.
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    qa, qb = q_ml(a, "f16"), q_ml(b, "f16")
    d = execute_logical(row, a, b)
    exact = [sum(Fraction(qa[i, k]) * Fraction(qb[k, j]) for k in range(16)) for i in range(4) for j in range(16)]
    inexact = sum(Fraction(float(np.float32(float(x)))) != x for x in exact)  # not an f32 value
    assert inexact > 10
    assert all(d.reshape(-1)[n] == round_once(q, "f32") for n, q in enumerate(exact))


@pytest.mark.parametrize(
    "mnemonic, arch, ulp, tiny",
    [
        ("v_mfma_f32_32x32x2f32", "gfx90a", 2.0**-23, 2.0**-40),  # 2**-80 vanishes in a float64 sum
        ("v_wmma_f32_16x16x4_f32", "gfx1250", 2.0**-23, 2.0**-40),
        ("v_mfma_f64_16x16x4f64", "gfx90a", 2.0**-52, 2.0**-100),  # 2**-200 vanishes in any float64 sum
    ],
)
def test_one_rounding_just_above_a_midpoint(mnemonic: str, arch: str, ulp: float, tiny: float) -> None:
    # Exact D = 1 + ulp/2 + tiny**2 lies just above the midpoint between 1 and 1 + ulp, so one
    # correct rounding gives 1 + ulp; summing in float64 (or rounding twice) would tie to 1.0.
    # With the tiny term negative the exact value is just below the midpoint: 1.0.
    row = lookup(mnemonic, arch)
    a, b, c = np.zeros((row.m, row.k)), np.zeros((row.k, row.n)), np.ones((row.m, row.n))
    a[:, 0], b[0, :] = ulp / 2, 1.0
    a[:, 1], b[1, :] = tiny, tiny
    assert (execute_logical(row, a, b, c) == 1 + ulp).all()
    b[1, :] = -tiny
    assert (execute_logical(row, a, b, c) == 1.0).all()


@pytest.mark.parametrize("mnemonic, arch, types", INT_ROWS, ids=[f"{a}:{m}" for m, a, _ in INT_ROWS])
def test_int_rows_match_numpy(mnemonic: str, arch: str, types: tuple[str, ...]) -> None:
    row = lookup(mnemonic, arch)
    assert row.types == types
    rng = np.random.default_rng(7)
    sa, sb, sc = _shapes(row)
    a, b = _inputs(rng, types[0], sa), _inputs(rng, types[1], sb)
    c = rng.integers(-(2**20), 2**20, size=sc)
    got = execute_logical(row, a, b, c)
    np.testing.assert_array_equal(got, ref_int(a, b, c))
    assert got.dtype.kind == "i"


@pytest.mark.parametrize("mnemonic, arch", [("v_mfma_i32_32x32x8i8", "gfx90a"), ("v_mfma_i32_16x16x32_i8", "gfx942")])
def test_int32_accumulator_wraps(mnemonic: str, arch: str) -> None:
    row = lookup(mnemonic, arch)
    sa, sb, sc = _shapes(row)
    a, b = np.full(sa, 127), np.full(sb, 127)
    c = np.full(sc, 2**31 - 10)
    got = execute_logical(row, a, b, c)
    want = ref_int(a, b, c)
    assert (2**31 - 10 + row.k * 127 * 127) > 2**31 - 1  # it really overflows
    np.testing.assert_array_equal(got, want)
    assert (got < 0).all()
    # and downwards
    a2, c2 = np.full(sa, -128), np.full(sc, -(2**31) + 5)
    got2 = execute_logical(row, a2, b, c2)
    np.testing.assert_array_equal(got2, ref_int(a2, b, c2))
    assert (got2 > 0).all()


# --------------------------------------------------------------------------- signedness (iu8/iu4)
SIGNED_ROWS = [
    ("v_wmma_i32_16x16x16_iu8", "gfx1100", 8),
    ("v_wmma_i32_16x16x16_iu8", "gfx1201", 8),
    ("v_wmma_i32_16x16x64_iu8", "gfx1250", 8),
    ("v_wmma_i32_16x16x16_iu4", "gfx1100", 4),
    ("v_wmma_i32_16x16x32_iu4", "gfx1201", 4),
]


def _twos(bits: np.ndarray, width: int) -> np.ndarray:
    return np.where(bits >= 2 ** (width - 1), bits - 2**width, bits)


@pytest.mark.parametrize("mnemonic, arch, width", SIGNED_ROWS, ids=[f"{a}:{m}" for m, a, _ in SIGNED_ROWS])
def test_iu_neg_bits_choose_signedness(mnemonic: str, arch: str, width: int) -> None:
    # RDNA3/RDNA4 ISA §7.9: for IU8/IU4, NEG[0] marks A signed and NEG[1] B signed; unsigned otherwise.
    row = lookup(mnemonic, arch)
    mod = row.modifier("neg")
    assert mod is not None and mod.kind == "signedness"
    assert row.types[:2] == (("u8",) * 2 if width == 8 else ("u4",) * 2)
    rng = np.random.default_rng(3)
    sa, sb, sc = _shapes(row)
    a_bits, b_bits = rng.integers(0, 2**width, size=sa), rng.integers(0, 2**width, size=sb)
    a_bits[0, 0, :] = 2**width - 1  # all-ones: 255 unsigned, -1 signed
    c = rng.integers(-1000, 1000, size=sc)
    for neg in (0, 1, 2, 3):
        a = _twos(a_bits, width) if neg & 1 else a_bits
        b = _twos(b_bits, width) if neg & 2 else b_bits
        got = execute_logical(row, a_bits[0], b_bits[0], c[0], neg=neg)
        np.testing.assert_array_equal(got, ref_int(a, b, c)[0], err_msg=f"neg={neg}")
    if width == 8:  # the same bits through numpy's own reinterpretation
        signed = a_bits.astype(np.uint8).view(np.int8)
        np.testing.assert_array_equal(execute_logical(row, a_bits[0], b_bits[0], c[0], neg=1),
                                      ref_int(signed, b_bits, c)[0])
    # unsigned and signed readings really differ on these inputs
    assert not np.array_equal(execute_logical(row, a_bits[0], b_bits[0], neg=0),
                              execute_logical(row, a_bits[0], b_bits[0], neg=3))
    for bad in (4, 7, -1):
        with pytest.raises(ModifierError, match=f"neg={bad}"):
            execute_logical(row, a_bits[0], b_bits[0], neg=bad)
    with pytest.raises(ModifierError, match="neg_hi=1"):
        execute_logical(row, a_bits[0], b_bits[0], neg_hi=1)


# --------------------------------------------------------------------------- neg / neg_hi
F16_WMMA = [("v_wmma_f32_16x16x16_f16", "gfx1100"), ("v_wmma_f32_16x16x16_f16", "gfx1201"),
            ("v_wmma_f32_16x16x32_f16", "gfx1250")]


def _small(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    # Small multiples of 1/4: every product and sum here is exact in f16 and f32.
    return rng.integers(-8, 9, size=shape) / 4.0


@pytest.mark.parametrize("mnemonic, arch", F16_WMMA)
def test_neg_and_neg_hi_on_packed_16bit(mnemonic: str, arch: str) -> None:
    # ISA §7.9 "NEG and NEG_HI": on packed 16-bit A/B, NEG acts on the low halves and NEG_HI on
    # the high halves; A/B hold consecutive k two per VGPR, even k in bits 0-15 (RDNA3/RDNA4
    # ISA §7.9 operand tables). LLVM negates a whole f16 operand by setting NEG and NEG_HI
    # together (AMDGPUISelDAGToDAG::SelectWMMAModsF16Neg). For C (f32): NEG[2] negates and
    # NEG_HI[2] takes the absolute value.
    row = lookup(mnemonic, arch)
    rng = np.random.default_rng(5)
    k = row.k
    a, b, c = _small(rng, (16, k)), _small(rng, (k, 16)), _small(rng, (16, 16))
    even = np.arange(k) % 2 == 0
    a_lo, b_lo = a.copy(), b.copy()
    a_lo[:, even] *= -1
    b_lo[even, :] *= -1
    cases = {
        (0, 0): a @ b + c,
        (1, 1): -(a @ b) + c,
        (2, 2): -(a @ b) + c,
        (3, 3): a @ b + c,
        (1, 0): a_lo @ b + c,
        (0, 1): (-a_lo) @ b + c,  # high halves: odd k
        (2, 0): a @ b_lo + c,
        (0, 2): a @ (-b_lo) + c,
        (4, 0): a @ b - c,
        (0, 4): a @ b + np.abs(c),
        (4, 4): a @ b - np.abs(c),
        (5, 1): -(a @ b) - c,
    }
    for (neg, neg_hi), want in cases.items():
        got = execute_logical(row, a, b, c, neg=neg, neg_hi=neg_hi)
        np.testing.assert_array_equal(got, want, err_msg=f"neg={neg} neg_hi={neg_hi}")
    # an explicit hi_mask overrides the layout: "every element is a high half"
    everything = np.ones((16, k), bool)
    np.testing.assert_array_equal(execute_logical(row, a, b, c, neg_hi=1, hi_mask=(everything, None)),
                                  -(a @ b) + c)


def test_f16_accumulator_neg_hi_is_abs() -> None:
    row = lookup("v_wmma_f16_16x16x16_f16", "gfx1100")
    c = -np.arange(256, dtype=np.float64).reshape(16, 16) / 8
    z = np.zeros((16, 16))
    np.testing.assert_array_equal(execute_logical(row, z, z, c, neg_hi=4), np.abs(c))
    np.testing.assert_array_equal(execute_logical(row, z, z, c, neg=4), -c)


def test_packed_halves_agree_across_waves_and_copies() -> None:
    # The default hi_mask is read from the wave32 layout: check that every 16-bit WMMA row with
    # NEG/NEG_HI puts element (i, k) of A and (k, j) of B in the same half in every copy and
    # every wave form, and that the high half is odd k (ISA: even k in bits 0-15).
    from tilesim.matrix import rows

    checked = 0
    for row in rows():
        mod = row.modifier("neg")
        if mod is None or mod.kind != "negate" or row.types[0] not in ("f16", "bf16") or row.sparse:
            continue
        for op in ("A", "B"):
            for w in row.wave_sizes:
                loc = row.layout(op, wave_size=w).location_array()
                kk = loc[:, 2] if op == "A" else loc[:, 1]
                np.testing.assert_array_equal(loc[:, 5] >= 16, kk % 2 == 1, err_msg=f"{row} {op} w{w}")
        checked += 1
    assert checked >= 10


def test_sparse_a_partial_neg_needs_a_mask() -> None:
    row = lookup("v_swmmac_f32_16x16x32_f16", "gfx1201")
    a, b = np.zeros((16, 32)), np.zeros((32, 16))
    with pytest.raises(ModifierError, match="hi_mask"):
        execute_logical(row, a, b, neg=1)
    execute_logical(row, a, b, neg=1, neg_hi=1)  # whole operand: fine


@pytest.mark.parametrize(
    "mnemonic, arch, kw",
    [
        ("v_mfma_f32_32x32x8f16", "gfx942", {"neg": 1}),  # MFMA has no NEG (LLVM: "neg is not supported")
        ("v_mfma_f32_32x32x8f16", "gfx942", {"neg_hi": 4}),
        ("v_wmma_f32_16x16x16_f16", "gfx1100", {"neg": 8}),
        ("v_wmma_f32_16x16x16_f16", "gfx1100", {"neg": True}),
        ("v_wmma_f32_16x16x16_fp8_fp8", "gfx1201", {"neg": 1}),  # gfx12 fp8 WMMA: no NEG
        ("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_80", {"neg": 1}),
    ],
)
def test_illegal_neg_is_refused(mnemonic: str, arch: str, kw: dict[str, int]) -> None:
    row = lookup(mnemonic, arch)
    sa, sb, _ = _shapes(row)
    with pytest.raises(ModifierError) as ei:
        execute_logical(row, np.zeros(sa[1:]), np.zeros(sb[1:]), **kw)
    name, value = next(iter(kw.items()))
    assert name in str(ei.value)


def test_f64_mfma_negation_on_cdna3() -> None:
    # CDNA3 ISA: on f64 MFMA the BLGP field is NEG (bit 0 A, 1 B, 2 C); LLVM spells it neg:[a,b,c].
    row = lookup("v_mfma_f64_16x16x4_f64", "gfx942")
    rng = np.random.default_rng(11)
    a, b, c = _small(rng, (16, 4)), _small(rng, (4, 16)), _small(rng, (16, 16))
    np.testing.assert_array_equal(execute_logical(row, a, b, c, neg=1), -(a @ b) + c)
    np.testing.assert_array_equal(execute_logical(row, a, b, c, neg=6), -(a @ b) - c)


# --------------------------------------------------------------------------- NaN / Inf / overflow
def test_nan_in_a_poisons_only_its_row() -> None:
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    rng = np.random.default_rng(2)
    a, b, c = _small(rng, (16, 16)), _small(rng, (16, 16)), _small(rng, (16, 16))
    a[3, 7] = np.nan
    d = execute_logical(row, a, b, c)
    assert np.isnan(d[3]).all()
    others = np.delete(np.arange(16), 3)
    assert np.isfinite(d[others]).all()
    a[3, 7] = 0.0
    np.testing.assert_array_equal(d[others], (a @ b + c)[others])


def test_nan_in_c_poisons_only_its_element() -> None:
    row = lookup("v_mfma_f32_16x16x16f16", "gfx90a")
    a, b, c = np.ones((16, 16)), np.ones((16, 16)), np.zeros((16, 16))
    c[4, 9] = np.nan
    c[5, 9] = -np.inf
    d = execute_logical(row, a, b, c)
    assert np.isnan(d[4, 9]) and d[5, 9] == -np.inf
    mask = np.ones((16, 16), bool)
    mask[4, 9] = mask[5, 9] = False
    assert (d[mask] == 16.0).all()


def test_inf_times_zero_is_nan() -> None:
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    a, b = np.ones((16, 16)), np.zeros((16, 16))
    a[2, 5] = np.inf
    b[5, 1] = 1.0
    b[5, 2] = -2.0
    d = execute_logical(row, a, b)
    assert d[2, 1] == np.inf and d[2, 2] == -np.inf
    assert np.isnan(d[2, [0, *range(3, 16)]]).all()  # inf * 0
    assert np.isfinite(np.delete(d, 2, axis=0)).all()
    # inf - inf
    a2 = np.zeros((16, 16))
    a2[0, 0], a2[0, 1] = np.inf, np.inf
    b2 = np.zeros((16, 16))
    b2[0, :], b2[1, :] = 1.0, -1.0
    assert np.isnan(execute_logical(row, a2, b2)[0]).all()


def test_f16_accumulator_overflows_to_inf() -> None:
    row = lookup("v_wmma_f16_16x16x16_f16", "gfx1100")
    a = np.zeros((16, 16))
    b = np.zeros((16, 16))
    a[0, :] = 200.0  # 16 * 200 * 200 = 640000 > 65504
    a[1, :] = -200.0
    b[:, :] = 200.0
    # rows 2/3: exact sums 65519 and 65520 straddle the overflow midpoint (65504 + 16)
    a[2, 0], a[2, 1] = 65504.0, 15.0
    a[3, 0], a[3, 1] = 65504.0, 16.0
    b[0, 0], b[1, 0] = 1.0, 1.0
    b[2:, 0] = 0.0
    d = execute_logical(row, a, b)
    assert (d[0, 1:] == np.inf).all() and (d[1, 1:] == -np.inf).all()
    with np.errstate(over="ignore"):  # numpy's IEEE f16 agrees
        assert float(np.float16(65519.0)) == 65504.0 and np.isinf(np.float16(65520.0))
    assert d[2, 0] == 65504.0 and d[3, 0] == np.inf


def test_f64_products_that_overflow_float64_still_cancel() -> None:
    # Products exact: 1e200*1e200 - 1e200*1e200 is 0, not inf - inf.
    row = lookup("v_mfma_f64_16x16x4f64", "gfx90a")
    a, b, c = np.zeros((16, 4)), np.zeros((4, 16)), np.ones((16, 16))
    a[0, 0] = a[0, 1] = 1e200
    b[0, 0], b[1, 0] = 1e200, -1e200
    d = execute_logical(row, a, b, c)
    assert d[0, 0] == 1.0
    b[1, 0] = 1e200
    assert execute_logical(row, a, b, c)[0, 0] == np.inf  # 2e400 really overflows


def test_nan_elsewhere_does_not_break_finite_outputs_f64() -> None:
    row = lookup("v_mfma_f64_16x16x4f64", "gfx90a")
    a, b = np.ones((16, 4)), np.ones((4, 16))
    a[15, 3] = np.nan
    d = execute_logical(row, a, b)
    assert np.isnan(d[15]).all() and (d[:15] == 4.0).all()


# --------------------------------------------------------------------------- bad shapes
def test_bad_shapes_name_the_expected_shape() -> None:
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1201")
    with pytest.raises(ModifierError, match=r"operand A .*\(16, 16\)"):
        execute_logical(row, np.zeros((16, 8)), np.zeros((16, 16)))
    with pytest.raises(ModifierError, match=r"operand B .*\(16, 16\)"):
        execute_logical(row, np.zeros((16, 16)), np.zeros((8, 16)))
    with pytest.raises(ModifierError, match=r"operand C .*\(16, 16\)"):
        execute_logical(row, np.zeros((16, 16)), np.zeros((16, 16)), np.zeros((16,)))
    multi = lookup("v_mfma_f32_32x32x1f32", "gfx90a")
    with pytest.raises(ModifierError, match=r"\(2, 32, 1\)"):
        execute_logical(multi, np.zeros((32, 1)), np.zeros((2, 1, 32)))
    nv = lookup("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "sm_80")
    with pytest.raises(ModifierError, match=r"\(16, 8\)"):
        execute_logical(nv, np.zeros((16, 16)), np.zeros((16, 16)))
    with pytest.raises(InstructionError):
        execute_logical("v_wmma_f32_16x16x16_f16", np.zeros((16, 16)), np.zeros((16, 16)))


# --------------------------------------------------------------------------- random programs
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([2.0**-20, 1.0, 2.0**10]))
def test_random_f16_wmma_matches_reference(seed: int, scale: float) -> None:
    row = lookup("v_wmma_f32_16x16x16_f16", "gfx1100")
    rng = np.random.default_rng(seed)
    a, b, c = ((rng.standard_normal((16, 16)) * scale).astype(np.float32) for _ in range(3))
    got = execute_logical(row, a, b, c)
    want = ref_float(q_ml(a, "f16")[None], q_ml(b, "f16")[None], q_ml(c, "f32")[None], "f32")[0]
    np.testing.assert_array_equal(got, want)


def test_ro_helper_bits() -> None:
    # _round_to_odd on a value between two floats sets the last bit: 1 + 2**-60 -> 1 + 2**-52.
    t = _round_to_odd(Fraction(1) + Fraction(1, 2**60), np.float64, np.uint64)
    assert struct.pack("<d", float(t)) == struct.pack("<d", 1 + 2.0**-52)
