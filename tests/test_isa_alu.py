"""Vector and scalar ALU instructions of the ISA emulator, each against an independent expectation:
Python integers for integer ops, exact rationals (``fractions``) rounded by the test's own
nearest-even search for f32 arithmetic, numpy / ml_dtypes casts for conversions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from tests._isa_harness import bits_f32, f32_bits, run
from tilesim.isa import IsaError

pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")

RNG = np.random.default_rng(7)
L = 32
A = RNG.integers(0, 2**32, L, dtype=np.uint64)
B = RNG.integers(0, 2**32, L, dtype=np.uint64)
C = RNG.integers(0, 2**32, L, dtype=np.uint64)
SMALL = RNG.integers(0, 40, L, dtype=np.uint64)  # shift amounts, some above 31
M32 = (1 << 32) - 1


def _ints(x: np.ndarray) -> list[int]:
    return [int(v) for v in x]


def _round_f32(q: Fraction) -> float:
    """Nearest-even binary32 to an exact rational, by comparing exact distances to neighbours."""
    if abs(q) >= 2**128 - 2**103:  # at or past the midpoint between FLT_MAX and 2**128: overflow
        return float("inf") if q > 0 else float("-inf")
    c = np.float32(float(q))
    cands = [c, np.nextafter(c, np.float32(np.inf)), np.nextafter(c, np.float32(-np.inf))]
    cands = [x for x in cands if np.isfinite(x)]
    best = min(cands, key=lambda x: (abs(Fraction(float(x)) - q), int(np.float32(x).view(np.uint32)) & 1))
    return float(best)


INT_CASES = {  # line, expected per lane from (a, b, c) Python ints
    "v_add_nc_u32_e32 v3, v0, v1": lambda a, b, c: (a + b) & M32,
    "v_add_u32_e32 v3, v0, v1": lambda a, b, c: (a + b) & M32,
    "v_sub_nc_u32_e32 v3, v0, v1": lambda a, b, c: (a - b) & M32,
    "v_subrev_nc_u32_e32 v3, v0, v1": lambda a, b, c: (b - a) & M32,
    "v_add3_u32 v3, v0, v1, v2": lambda a, b, c: (a + b + c) & M32,
    "v_mul_lo_u32 v3, v0, v1": lambda a, b, c: (a * b) & M32,
    "v_and_b32_e32 v3, v0, v1": lambda a, b, c: a & b,
    "v_or_b32_e32 v3, v0, v1": lambda a, b, c: a | b,
    "v_xor_b32_e32 v3, v0, v1": lambda a, b, c: a ^ b,
    "v_not_b32_e32 v3, v0": lambda a, b, c: ~a & M32,
    "v_or3_b32 v3, v0, v1, v2": lambda a, b, c: a | b | c,
    "v_xor3_b32 v3, v0, v1, v2": lambda a, b, c: a ^ b ^ c,
    "v_and_or_b32 v3, v0, v1, v2": lambda a, b, c: (a & b) | c,
    "v_bfi_b32 v3, v0, v1, v2": lambda a, b, c: (a & b) | (~a & c & M32),
    "v_lshlrev_b32_e32 v3, v4, v1": lambda a, b, c, s=None: None,  # replaced below (shift operand)
    "v_mov_b32_e32 v3, v0": lambda a, b, c: a,
    "v_mov_b32_e32 v3, 0x280": lambda a, b, c: 0x280,
    "v_mov_b32_e32 v3, -16": lambda a, b, c: (-16) & M32,
    "v_mov_b32_e32 v3, 0.5": lambda a, b, c: 0x3F000000,
}
SHIFT_CASES = {  # v4 holds shift amounts (some >= 32: the ISA uses the low 5 bits)
    "v_lshlrev_b32_e32 v3, v4, v1": lambda s, b, c: (b << (s & 31)) & M32,
    "v_lshrrev_b32_e32 v3, v4, v1": lambda s, b, c: b >> (s & 31),
    "v_ashrrev_i32_e32 v3, v4, v1": lambda s, b, c: ((b - (1 << 32) if b >> 31 else b) >> (s & 31)) & M32,
    "v_lshl_add_u32 v3, v1, v4, v2": lambda s, b, c: ((b << (s & 31)) + c) & M32,
    "v_lshl_or_b32 v3, v1, v4, v2": lambda s, b, c: ((b << (s & 31)) | c) & M32,
    "v_add_lshl_u32 v3, v1, v2, v4": lambda s, b, c: (((b + c) & M32) << (s & 31)) & M32,
    "v_bfe_u32 v3, v1, v4, v5": lambda s, b, c: (b >> (s & 31)) & ((1 << 7) - 1),
}
del INT_CASES["v_lshlrev_b32_e32 v3, v4, v1"]


@pytest.mark.parametrize("line", list(INT_CASES))
def test_integer_vector_ops(line: str) -> None:
    st = run("gfx1201", "\t" + line, {0: A, 1: B, 2: C})
    want = [INT_CASES[line](a, b, c) for a, b, c in zip(_ints(A), _ints(B), _ints(C))]
    assert _ints(st.v[3][0]) == want


@pytest.mark.parametrize("line", list(SHIFT_CASES))
def test_shift_and_bitfield_ops(line: str) -> None:
    st = run("gfx1100", "\t" + line, {1: B, 2: C, 4: SMALL, 5: np.full(L, 7)})
    want = [SHIFT_CASES[line](s, b, c) for s, b, c in zip(_ints(SMALL), _ints(B), _ints(C))]
    assert _ints(st.v[3][0]) == want


def test_64_bit_shifts_and_lshl_add_u64() -> None:
    st = run("gfx942", "\tv_lshlrev_b64 v[6:7], 3, v[0:1]\n\tv_lshl_add_u64 v[8:9], v[0:1], 2, v[2:3]",
             {0: np.resize(A, 64), 1: np.resize(B, 64), 2: np.resize(C, 64), 3: np.resize(SMALL, 64)})
    x = [a | (b << 32) for a, b in zip(_ints(np.resize(A, 64)), _ints(np.resize(B, 64)))]
    y = [c | (s << 32) for c, s in zip(_ints(np.resize(C, 64)), _ints(np.resize(SMALL, 64)))]
    got6 = [lo | (hi << 32) for lo, hi in zip(_ints(st.v[6][0]), _ints(st.v[7][0]))]
    got8 = [lo | (hi << 32) for lo, hi in zip(_ints(st.v[8][0]), _ints(st.v[9][0]))]
    assert got6 == [(v << 3) % 2**64 for v in x]
    assert got8 == [((v << 2) + w) % 2**64 for v, w in zip(x, y)]


def test_lshl_add_u64_refuses_a_shift_above_four() -> None:
    with pytest.raises(IsaError, match="shift above 4"):
        run("gfx942", "\tv_lshl_add_u64 v[8:9], v[0:1], v4, v[2:3]", {4: np.full(64, 5)})


def test_carry_chain_adds_64_bit_values_and_writes_masks() -> None:
    st = run("gfx1201", "\tv_add_co_u32 v3, s4, v0, v1\n\tv_add_co_ci_u32_e64 v5, s6, v2, v2, s4", {0: A, 1: B, 2: C})
    carry = [(a + b) >> 32 for a, b in zip(_ints(A), _ints(B))]
    assert int(st.s[4][0]) == sum(c << i for i, c in enumerate(carry))
    assert _ints(st.v[3][0]) == [(a + b) & M32 for a, b in zip(_ints(A), _ints(B))]
    assert _ints(st.v[5][0]) == [(2 * c + k) & M32 for c, k in zip(_ints(C), carry)]
    assert int(st.s[6][0]) == sum(((2 * c + k) >> 32) << i for i, (c, k) in enumerate(zip(_ints(C), carry)))


def test_exec_masks_vector_writes_and_compares_write_zero_for_inactive_lanes() -> None:
    st = run("gfx1201", "\tv_mov_b32_e32 v3, 7\n\tv_cmp_gt_u32_e32 vcc_lo, v0, v1", {0: A, 1: B, 3: np.full(L, 5)},
             exec_mask=0x0000FFFF)
    assert _ints(st.v[3][0]) == [7] * 16 + [5] * 16
    want = sum(int(a > b) << i for i, (a, b) in enumerate(zip(_ints(A), _ints(B))) if i < 16)
    assert int(st.s[106][0]) == want


@pytest.mark.parametrize(("rel", "fn"), [("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b),
                                         ("lt", lambda a, b: a < b), ("ge", lambda a, b: a >= b)])
def test_signed_and_unsigned_compares(rel: str, fn) -> None:
    a = np.array([0, 1, 2**31, 2**32 - 1] * 8, np.uint64)
    b = np.array([1, 1, 5, 0] * 8, np.uint64)
    for ty in ("u32", "i32"):
        st = run("gfx1100", f"\tv_cmp_{rel}_{ty}_e64 s8, v0, v1", {0: a, 1: b})
        sv = (lambda x: x - 2**32 if ty == "i32" and x >= 2**31 else x)
        want = sum(int(fn(sv(x), sv(y))) << i for i, (x, y) in enumerate(zip(_ints(a), _ints(b))))
        assert int(st.s[8][0]) == want, ty


def test_cndmask_selects_by_lane_mask() -> None:
    st = run("gfx1201", "\tv_cndmask_b32_e64 v3, v0, v1, s2", {0: A, 1: B}, s={2: 0xF0F0F0F0})
    assert _ints(st.v[3][0]) == [b if (0xF0F0F0F0 >> i) & 1 else a for i, (a, b) in enumerate(zip(_ints(A), _ints(B)))]


FVALS = np.array([1.5, -2.25, 3.0e-39, 1e30, -0.0, 0.0, np.inf, 7.0] * 4, np.float32)  # a denormal included
GVALS = np.array([0.1, 3.0, 2.0, 1e10, 0.0, -0.0, 1.0, -7.0] * 4, np.float32)
HVALS = np.array([1e-8, -1.0, 1e-45, 1.0, 1.0, -1.0, 2.0, 49.0] * 4, np.float32)


def _exact(x: float) -> Fraction:
    return Fraction(float(x))


@pytest.mark.parametrize(("line", "fn"), [
    ("v_add_f32_e32 v3, v0, v1", lambda a, b, c: a + b),
    ("v_sub_f32_e32 v3, v0, v1", lambda a, b, c: a - b),
    ("v_mul_f32_e32 v3, v0, v1", lambda a, b, c: a * b),
    ("v_fma_f32 v3, v0, v1, v2", lambda a, b, c: a * b + c),
])
def test_f32_arithmetic_rounds_once(line: str, fn) -> None:
    st = run("gfx1201", "\t" + line, {0: f32_bits(FVALS), 1: f32_bits(GVALS), 2: f32_bits(HVALS)})
    got = bits_f32(st.v[3][0])
    for a, b, c, g in zip(FVALS, GVALS, HVALS, got):
        if not all(np.isfinite([a, b, c])):
            with np.errstate(all="ignore"):
                assert np.isnan(g) == np.isnan(np.float32(fn(np.float64(a), np.float64(b), np.float64(c))))
            continue
        want = _round_f32(fn(_exact(a), _exact(b), _exact(c)))
        assert float(g) == want or (want == 0 and g == 0), (line, a, b, c, g, want)


def test_fma_is_one_rounding_where_float64_double_rounds() -> None:
    # a*b+c lands just above a float32 tie after float64 rounds the sticky bit away
    a = np.float32(1 + 2**-12)
    b = np.float32(1 + 2**-12)
    c = np.float32(-(2**-24) * 0.75)
    wrong = np.float32(np.float64(a) * np.float64(b) + np.float64(c))
    want = _round_f32(_exact(a) * _exact(b) + _exact(c))
    st = run("gfx1201", "\tv_fma_f32 v3, v0, v1, v2\n\tv_fmac_f32_e32 v2, v0, v1",
             {0: f32_bits(np.full(L, a)), 1: f32_bits(np.full(L, b)), 2: f32_bits(np.full(L, c))})
    assert float(bits_f32(st.v[3][0])[0]) == want
    assert float(bits_f32(st.v[2][0])[0]) == want
    assert isinstance(wrong, np.float32)


def test_max_min_ieee_and_signed_zero() -> None:
    a = np.array([np.nan, 1.0, -0.0, 0.0, -3.0] + [0.0] * 27, np.float32)
    b = np.array([2.0, np.nan, 0.0, -0.0, -4.0] + [0.0] * 27, np.float32)
    st = run("gfx942", "\tv_max_f32_e32 v3, v0, v1\n\tv_min_f32_e32 v4, v0, v1",
             {0: f32_bits(np.resize(a, 64)), 1: f32_bits(np.resize(b, 64))})
    mx, mn = bits_f32(st.v[3][0])[:5], bits_f32(st.v[4][0])[:5]
    assert list(mx) == [2.0, 1.0, 0.0, 0.0, -3.0] and not np.signbit(mx[2]) and not np.signbit(mx[3])
    assert list(mn) == [2.0, 1.0, 0.0, 0.0, -4.0] and np.signbit(mn[2]) and np.signbit(mn[3])
    st = run("gfx1201", "\tv_max3_num_f32 v3, v0, v1, v2", {0: f32_bits(FVALS), 1: f32_bits(GVALS), 2: f32_bits(HVALS)})
    assert np.array_equal(bits_f32(st.v[3][0]), np.maximum(np.maximum(FVALS, GVALS), HVALS))


def test_conversions_against_numpy() -> None:
    x = np.array([1.5, -2.5, 65504.0, 70000.0, 1e-8, -3.7, 2.0**31, np.nan] * 4, np.float32)
    st = run("gfx1100", "\tv_cvt_f16_f32_e32 v3.l, v0\n\tv_cvt_f16_f32_e32 v3.h, v1\n\tv_cvt_i32_f32_e32 v4, v0\n"
             "\tv_rndne_f32_e32 v5, v0\n\tv_cvt_f32_i32_e32 v6, v2", {0: f32_bits(x), 1: f32_bits(-x), 2: A})
    lo = (st.v[3][0] & 0xFFFF).astype(np.uint16).view(np.float16)
    hi = (st.v[3][0] >> 16).astype(np.uint16).view(np.float16)
    np.testing.assert_array_equal(lo, x.astype(np.float16))
    np.testing.assert_array_equal(hi, (-x).astype(np.float16))
    want_i = [0 if np.isnan(v) else int(max(min(np.trunc(float(v)), 2**31 - 1), -2**31)) & M32 for v in x]
    assert _ints(st.v[4][0]) == want_i
    np.testing.assert_array_equal(bits_f32(st.v[5][0]), np.rint(x))
    np.testing.assert_array_equal(bits_f32(st.v[6][0]), A.astype(np.uint32).view(np.int32).astype(np.float32))


def test_non_true16_cvt_keeps_the_high_half_on_rdna_and_zeroes_it_on_cdna() -> None:
    x = f32_bits(np.full(64, 1.0, np.float32))
    st = run("gfx1201", "\tv_cvt_f16_f32_e32 v3, v0", {0: x[:32], 3: np.full(32, 0xABCD0000)})
    assert int(st.v[3][0][0]) == 0xABCD3C00
    st = run("gfx942", "\tv_cvt_f16_f32_e32 v3, v0", {0: x, 3: np.full(64, 0xABCD0000)})
    assert int(st.v[3][0][0]) == 0x3C00


def test_ldexp_exp_rcp() -> None:
    x = np.array([1.0, -3.5, 0.75, 10.0] * 8, np.float32)
    e = np.array([3, -2, 130, -150] * 8, np.int64)
    st = run("gfx1201", "\tv_ldexp_f32 v3, v0, v1\n\tv_exp_f32_e32 v4, v0\n\tv_rcp_f32_e32 v5, v0",
             {0: f32_bits(x), 1: e.astype(np.uint64) & M32})
    np.testing.assert_array_equal(bits_f32(st.v[3][0]), np.ldexp(x.astype(np.float64), e).astype(np.float32))
    np.testing.assert_array_equal(bits_f32(st.v[4][0]), np.exp2(x.astype(np.float64)).astype(np.float32))
    np.testing.assert_array_equal(bits_f32(st.v[5][0]), (1 / x.astype(np.float64)).astype(np.float32))


def test_vopd_halves_read_before_either_writes() -> None:
    st = run("gfx1201", "\tv_dual_mov_b32 v0, v1 :: v_dual_mov_b32 v1, v0", {0: A, 1: B})
    assert _ints(st.v[0][0]) == _ints(B) and _ints(st.v[1][0]) == _ints(A)


def test_float_source_modifiers_flip_and_clear_the_sign() -> None:
    x = f32_bits(np.array([-1.5, 2.0] * 16, np.float32))
    st = run("gfx1201", "\tv_mul_f32_e64 v3, -v0, |v1|", {0: x, 1: x})
    np.testing.assert_array_equal(bits_f32(st.v[3][0]), np.array([1.5 * 1.5, -2.0 * 2.0] * 16, np.float32))


# ---------------------------------------------------------------- scalar
@pytest.mark.parametrize(("line", "want", "scc"), [
    ("s_add_u32 s3, s0, s1", lambda a, b: (a + b) & M32, lambda a, b: a + b > M32),
    ("s_sub_u32 s3, s0, s1", lambda a, b: (a - b) & M32, lambda a, b: b > a),
    ("s_add_i32 s3, s0, s1", lambda a, b: (a + b) & M32,
     lambda a, b: not -2**31 <= (a - (a >> 31 << 32)) + (b - (b >> 31 << 32)) < 2**31),
    ("s_and_b32 s3, s0, s1", lambda a, b: a & b, lambda a, b: (a & b) != 0),
    ("s_or_b32 s3, s0, s1", lambda a, b: a | b, lambda a, b: (a | b) != 0),
    ("s_xor_b32 s3, s0, s1", lambda a, b: a ^ b, lambda a, b: (a ^ b) != 0),
    ("s_and_not1_b32 s3, s0, s1", lambda a, b: a & ~b & M32, lambda a, b: (a & ~b & M32) != 0),
    ("s_lshl_b32 s3, s0, s1", lambda a, b: (a << (b & 31)) & M32, lambda a, b: ((a << (b & 31)) & M32) != 0),
    ("s_lshr_b32 s3, s0, s1", lambda a, b: a >> (b & 31), lambda a, b: (a >> (b & 31)) != 0),
])
def test_scalar_ops_and_scc(line: str, want, scc) -> None:
    for a, b in [(0xFFFFFFF0, 0x20), (0x7FFFFFFF, 1), (5, 7), (0x80000000, 0x80000000), (0, 0)]:
        st = run("gfx1201", "\t" + line, s={0: a, 1: b})
        assert int(st.s[3][0]) == want(a, b), (line, a, b)
        assert bool(st.scc[0]) == bool(scc(a, b)), (line, a, b)


def _bfe(a: int, b: int, signed: bool) -> int:  # GCN3/CDNA3 ISA S_BFE_{U,I}32, in Python integers
    off, width = b & 31, (b >> 16) & 0x7F
    field = (a >> off) & ((1 << width) - 1)
    if signed and field >> (width - 1) & 1:
        field -= 1 << width
    return field & M32


@pytest.mark.parametrize("m", ["s_bfe_u32", "s_bfe_i32"])
def test_scalar_bit_field_extract(m: str) -> None:
    # (value, offset | width << 16): a field in the middle, the top bit alone, a field past bit 31, width 31
    cases = [(0xDEADBEEF, 4 | 8 << 16), (0x80000000, 31 | 1 << 16), (0xDEADBEEF, 24 | 12 << 16),
             (0x7EADBEEF, 28 | 4 << 16), (0xFFFFFFFE, 1 | 31 << 16), (0x12345678, 0 | 1 << 16)]
    for a, b in cases:
        st = run("gfx942", f"\t{m} s3, s0, s1", s={0: a, 1: b})
        want = _bfe(a, b, m.endswith("i32"))
        assert int(st.s[3][0]) == want and bool(st.scc[0]) == (want != 0), (m, hex(a), hex(b))
    with pytest.raises(IsaError, match="width 32"):
        run("gfx942", f"\t{m} s3, s0, s1", s={0: 1, 1: 32 << 16})


def test_scalar_compare_select_and_movk() -> None:
    st = run("gfx942", "\ts_cmp_gt_i32 s0, -1\n\ts_cselect_b64 s[4:5], -1, 0\n\ts_movk_i32 s6, 0xfff0",
             s={0: 0x80000000})
    assert not st.scc[0] and int(st.s[4][0]) == 0 and int(st.s[5][0]) == 0
    assert int(st.s[6][0]) == 0xFFFFFFF0


def test_saveexec_and_branches_on_exec() -> None:
    body = ("\ts_and_saveexec_b32 s4, s2\n\ts_cbranch_execz .LBB0_1\n\tv_mov_b32_e32 v3, 1\n.LBB0_1:\n"
            "\ts_or_b32 exec_lo, exec_lo, s4\n\ts_mov_b32 exec_lo, 0xffff0000\n"
            # the else half of an if/else: EXEC = S0 & ~EXEC (GCN3/RDNA3 S_ANDN2/AND_NOT1_SAVEEXEC)
            "\ts_and_not1_saveexec_b32 s5, -1\n\tv_mov_b32_e32 v4, 2\n\ts_or_b32 exec_lo, exec_lo, s5")
    st = run("gfx1201", body, s={2: 0x0000FFFF})
    assert _ints(st.v[3][0]) == [1] * 16 + [0] * 16
    assert int(st.s[4][0]) == M32 and int(st.s[126][0]) == M32
    assert int(st.s[5][0]) == 0xFFFF0000 and _ints(st.v[4][0]) == [2] * 16 + [0] * 16
    assert int(st.s[126][0]) == M32
    st = run("gfx1201", body, s={2: 0})
    assert _ints(st.v[3][0]) == [0] * 32


def test_scalar_loop_counts() -> None:
    st = run("gfx1100", "\ts_mov_b32 s0, 0\n.LBB0_1:\n\ts_add_i32 s0, s0, 3\n\ts_cmp_lt_u32 s0, 30\n"
             "\ts_cbranch_scc1 .LBB0_1")
    assert int(st.s[0][0]) == 30


# ---------------------------------------------------------------- fail closed
@pytest.mark.parametrize(("line", "match"), [
    ("v_add_f32_e64 v3, v0, v1 clamp", "clamp"),
    ("v_add_f32_e64 v3, v0, v1 mul:2", "mul"),
    ("v_add_f32_e64_dpp v3, v0, v1 row_shr:1", "DPP"),  # VOP3 DPP (VOP1/VOP2 DPP: test_isa_lanes.py)
    ("v_frobnicate_b32 v3, v0", "not modelled"),
    ("v_add_nc_u32_e64 v3, -v0, v1", "integer operand"),
    ("v_pk_add_f16 v3, v0, v1 op_sel:[1,0]", "op_sel"),
    ("s_frob_b32 s0, s1", "not modelled"),
])
def test_unmodelled_forms_raise_naming_mnemonic_target_and_line(line: str, match: str) -> None:
    with pytest.raises(IsaError, match=match) as e:
        run("gfx1201", "\tv_mov_b32_e32 v9, 0\n\t" + line)
    assert "gfx1201" in str(e.value) and "line 5" in str(e.value) and line.split()[0] in str(e.value)


# ---------------------------------------------------------------- lanes
def test_ds_bpermute_gathers_from_source_lanes_and_inactive_sources_read_zero() -> None:
    src = np.array([(i * 7 + 3) % 32 for i in range(32)], np.uint64)
    st = run("gfx1201", "\tds_bpermute_b32 v3, v1, v0", {0: A, 1: src * 4}, exec_mask=0xFFFF0FFF)
    active = [(0xFFFF0FFF >> i) & 1 for i in range(32)]
    want = [(int(A[s]) if active[s] else 0) if active[i] else 0 for i, s in enumerate(_ints(src))]
    assert _ints(st.v[3][0]) == want


def test_ds_permute_scatters_with_the_higher_lane_winning() -> None:
    dst_lane = np.array([i // 2 for i in range(32)], np.uint64)  # lanes 2k and 2k+1 both write lane k
    st = run("gfx1100", "\tds_permute_b32 v3, v1, v0", {0: A, 1: dst_lane * 4})
    want = [int(A[2 * k + 1]) if k < 16 else 0 for k in range(32)]
    assert _ints(st.v[3][0]) == want


def test_readlane_readfirstlane_writelane() -> None:
    st = run("gfx942", "\tv_readlane_b32 s4, v0, 37\n\tv_readfirstlane_b32 s5, v0\n\ts_mov_b32 s6, 9\n"
             "\tv_writelane_b32 v2, s6, 40", {0: np.resize(A, 64), 2: np.zeros(64)}, exec_mask=0xFFFF_FF00_0000_0000)
    assert int(st.s[4][0]) == int(np.resize(A, 64)[37])
    assert int(st.s[5][0]) == int(np.resize(A, 64)[40])  # the lowest active lane
    assert _ints(st.v[2][0]) == [9 if i == 40 else 0 for i in range(64)]


def test_pack_b32_f16_joins_two_halves() -> None:
    st = run("gfx1201", "\tv_pack_b32_f16 v3, v0, v1", {0: A, 1: B})
    assert _ints(st.v[3][0]) == [(b & 0xFFFF) << 16 | (a & 0xFFFF) for a, b in zip(_ints(A), _ints(B))]


def test_s_add_nc_u64_wraps_and_leaves_scc() -> None:
    """gfx12 64-bit scalar add: the sum modulo 2**64 (Python ints), no carry out, SCC unchanged."""
    for a, b, scc in [((1 << 64) - 5, 32, 1), (0xFFFFFFFF, 1, 0), (0x123456789, 0xFEDCBA987, 1)]:
        st = run("gfx1201", "\ts_cmp_eq_u32 s8, " + ("s8" if scc else "1") + "\n\ts_add_nc_u64 s[4:5], s[0:1], s[2:3]",
                 s={0: a & M32, 1: a >> 32, 2: b & M32, 3: b >> 32, 8: 0})
        got = int(st.s[4][0]) | int(st.s[5][0]) << 32
        assert got == (a + b) % (1 << 64), (a, b)
        assert bool(st.scc[0]) == bool(scc)
