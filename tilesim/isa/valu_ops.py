"""The vector ALU semantics table: per mnemonic, its source kinds, result kind and a numpy function
over all selected lanes at once (the ISA guides' pseudo-code, ``D.u = S0.u + S1.u`` …). f32 arithmetic
is IEEE-754 binary32, round-to-nearest-even, denormals kept; ``v_exp_f32``/``v_rcp_f32`` are the
correctly rounded functions (the hardware is specified to 1 ULP)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["VALU_OPS", "fma_f32", "KIND_DT", "KIND_BITS", "WIDE", "dpp_sources", "permlane_sources"]

_U32, _U64 = np.uint32, np.uint64
KIND_DT = {"u32": np.uint32, "i32": np.int32, "f32": np.float32, "u64": np.uint64, "i64": np.int64,
            "f64": np.float64, "u16": np.uint16, "i16": np.int16, "f16": np.float16, "mask": None}
KIND_BITS = {"u32": "b32", "i32": "b32", "f32": "f32", "u64": "b64", "i64": "b64", "f64": "f64", "u16": "b16", "i16": "b16",
         "f16": "f16"}
WIDE = ("u64", "i64", "f64")


def fma_f32(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a*b + c`` rounded once to f32. The product of two f32 is exact in f64; the f64 sum is
    rounded to odd (error-free two-sum decides the sticky bit), and round-to-odd to 53 bits followed
    by round-to-nearest-even to 24 bits equals a single rounding."""
    with np.errstate(all="ignore"):
        p = a.astype(np.float64) * b.astype(np.float64)
        c64 = np.asarray(c, np.float64)
        s = p + c64
        bp = s - c64
        err = (p - bp) + (c64 - (s - bp))
        bits = s.view(np.int64) if isinstance(s, np.ndarray) else np.asarray(s).view(np.int64)
        fix = np.isfinite(s) & (err != 0) & ((bits & 1) == 0)
        toward = np.where(err > 0, np.inf, -np.inf)
        s = np.where(fix, np.nextafter(s, toward), s)
        return s.astype(np.float32)


def _maxf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # IEEE maxNum (NaN loses); -0 < +0 as the AMD guides order them
    with np.errstate(all="ignore"):
        r = np.fmax(a, b)
        eq = a == b
        return np.where(eq, (a.view(_U32) & b.view(_U32)).view(np.float32), r)


def _minf(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        r = np.fmin(a, b)
        return np.where(a == b, (a.view(_U32) | b.view(_U32)).view(np.float32), r)


def _cvt_i32_f32(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        t = np.trunc(a.astype(np.float64))
        t = np.where(np.isnan(t), 0, np.clip(t, -2.0**31, 2.0**31 - 1))
        return t.astype(np.int64).astype(np.int32)


def _cvt_u32_f32(a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        t = np.trunc(a.astype(np.float64))
        t = np.where(np.isnan(t), 0, np.clip(t, 0, 2.0**32 - 1))
        return t.astype(np.uint64).astype(np.uint32)


def _bfe_signed(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    off, width = _sh(b, 31).astype(np.int64), _sh(c, 31).astype(np.int64)
    field = (a.astype(np.int64) >> off) & ((np.int64(1) << width) - 1)
    top = np.int64(1) << np.maximum(width - 1, 0)
    return np.where(width == 0, 0, (field ^ top) - top).astype(np.int32)


def _brev32(a: np.ndarray) -> np.ndarray:
    x = a.astype(_U32)
    out = np.zeros_like(x)
    for i in range(32):
        out |= ((x >> _U32(i)) & _U32(1)) << _U32(31 - i)
    return out


def _sh(x: np.ndarray, mask: int) -> np.ndarray:
    return (np.asarray(x).astype(_U32) & _U32(mask))


def _f32(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    def run(*a: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(fn(*a), np.float32)
    return run


def _round_f64_to_f32(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float64).astype(np.float32)


def _f64(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return np.asarray(x, np.float64)


# name: (source kinds, result kind, function). Operand order is the printed order.
VALU_OPS: dict[str, tuple[tuple[str, ...], str, Callable[..., np.ndarray]]] = {
    "v_mov_b32": (("u32",), "u32", lambda a: a),
    "v_mov_b64": (("u64",), "u64", lambda a: a),
    "v_mov_b16": (("u16",), "u16", lambda a: a),
    # CDNA3/CDNA4: move 32 bits between the architectural and the accumulation VGPRs (one unified file)
    "v_accvgpr_write_b32": (("u32",), "u32", lambda a: a),
    "v_accvgpr_read_b32": (("u32",), "u32", lambda a: a),
    "v_accvgpr_mov_b32": (("u32",), "u32", lambda a: a),
    "v_lshlrev_b16": (("u16", "u16"), "u16", lambda a, b: b << (a & np.uint16(15))),
    "v_lshrrev_b16": (("u16", "u16"), "u16", lambda a, b: b >> (a & np.uint16(15))),
    "v_add_u16": (("u16", "u16"), "u16", lambda a, b: a + b),
    "v_sub_u16": (("u16", "u16"), "u16", lambda a, b: a - b),
    "v_and_b16": (("u16", "u16"), "u16", lambda a, b: a & b),
    "v_or_b16": (("u16", "u16"), "u16", lambda a, b: a | b),
    "v_xor_b16": (("u16", "u16"), "u16", lambda a, b: a ^ b),
    "v_pack_b32_f16": (("f16", "f16"), "u32",
                       lambda a, b: (b.view(np.uint16).astype(_U32) << _U32(16)) | a.view(np.uint16).astype(_U32)),
    "v_add_u32": (("u32", "u32"), "u32", lambda a, b: a + b),
    "v_add_nc_u32": (("u32", "u32"), "u32", lambda a, b: a + b),
    "v_sub_u32": (("u32", "u32"), "u32", lambda a, b: a - b),
    "v_sub_nc_u32": (("u32", "u32"), "u32", lambda a, b: a - b),
    "v_subrev_u32": (("u32", "u32"), "u32", lambda a, b: b - a),
    "v_subrev_nc_u32": (("u32", "u32"), "u32", lambda a, b: b - a),
    "v_add3_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: a + b + c),
    "v_mul_lo_u32": (("u32", "u32"), "u32", lambda a, b: ((a.astype(_U64) * b.astype(_U64)) & _U64(0xFFFFFFFF))),
    "v_mul_u32_u24": (("u32", "u32"), "u32",
                      lambda a, b: ((a & _U32(0xFFFFFF)).astype(_U64) * (b & _U32(0xFFFFFF)).astype(_U64))
                      & _U64(0xFFFFFFFF)),
    "v_and_b32": (("u32", "u32"), "u32", lambda a, b: a & b),
    "v_or_b32": (("u32", "u32"), "u32", lambda a, b: a | b),
    "v_xor_b32": (("u32", "u32"), "u32", lambda a, b: a ^ b),
    "v_not_b32": (("u32",), "u32", lambda a: ~a),
    "v_or3_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: a | b | c),
    "v_xor3_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: a ^ b ^ c),
    "v_xad_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (a ^ b) + c),  # CDNA3/RDNA ISA: (S0 ^ S1) + S2
    "v_and_or_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (a & b) | c),
    "v_lshlrev_b32": (("u32", "u32"), "u32", lambda a, b: b << _sh(a, 31)),
    "v_lshrrev_b32": (("u32", "u32"), "u32", lambda a, b: b >> _sh(a, 31)),
    "v_ashrrev_i32": (("u32", "i32"), "i32", lambda a, b: b >> _sh(a, 31).astype(np.int32)),
    "v_lshl_add_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (a << _sh(b, 31)) + c),
    "v_add_lshl_u32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (a + b) << _sh(c, 31)),
    "v_lshl_or_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (a << _sh(b, 31)) | c),
    "v_bfe_u32": (("u32", "u32", "u32"), "u32",
                  lambda a, b, c: ((a.astype(_U64) >> _sh(b, 31).astype(_U64))
                                   & ((_U64(1) << _sh(c, 31).astype(_U64)) - _U64(1)))),
    "v_bfe_i32": (("u32", "u32", "u32"), "i32", lambda a, b, c: _bfe_signed(a, b, c)),
    "v_min_u32": (("u32", "u32"), "u32", np.minimum),
    "v_max_u32": (("u32", "u32"), "u32", np.maximum),
    "v_min_i32": (("i32", "i32"), "i32", np.minimum),
    "v_max_i32": (("i32", "i32"), "i32", np.maximum),
    "v_mul_hi_u32": (("u32", "u32"), "u32", lambda a, b: (a.astype(_U64) * b.astype(_U64)) >> _U64(32)),
    "v_mad_u32_u24": (("u32", "u32", "u32"), "u32",
                      lambda a, b, c: ((a & _U32(0xFFFFFF)).astype(_U64) * (b & _U32(0xFFFFFF)).astype(_U64)
                                       + c.astype(_U64)) & _U64(0xFFFFFFFF)),
    "v_alignbit_b32": (("u32", "u32", "u32"), "u32",
                       lambda a, b, c: ((a.astype(_U64) << _U64(32) | b.astype(_U64)) >> _sh(c, 31).astype(_U64))
                       & _U64(0xFFFFFFFF)),
    "v_bfi_b32": (("u32", "u32", "u32"), "u32", lambda a, b, c: (a & b) | (~a & c)),
    "v_lshlrev_b64": (("u32", "u64"), "u64", lambda a, b: b << _sh(a, 63).astype(_U64)),
    "v_lshrrev_b64": (("u32", "u64"), "u64", lambda a, b: b >> _sh(a, 63).astype(_U64)),
    "v_add_f32": (("f32", "f32"), "f32", _f32(lambda a, b: a + b)),
    "v_sub_f32": (("f32", "f32"), "f32", _f32(lambda a, b: a - b)),
    "v_subrev_f32": (("f32", "f32"), "f32", _f32(lambda a, b: b - a)),
    "v_mul_f32": (("f32", "f32"), "f32", _f32(lambda a, b: a * b)),
    "v_fma_f32": (("f32", "f32", "f32"), "f32", fma_f32),
    "v_max_f32": (("f32", "f32"), "f32", _maxf),
    "v_min_f32": (("f32", "f32"), "f32", _minf),
    "v_max_num_f32": (("f32", "f32"), "f32", _maxf),
    "v_min_num_f32": (("f32", "f32"), "f32", _minf),
    "v_max3_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: _maxf(_maxf(a, b), c)),
    "v_max3_num_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: _maxf(_maxf(a, b), c)),
    "v_min3_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: _minf(_minf(a, b), c)),
    "v_min3_num_f32": (("f32", "f32", "f32"), "f32", lambda a, b, c: _minf(_minf(a, b), c)),
    "v_rndne_f32": (("f32",), "f32", _f32(np.rint)),
    "v_trunc_f32": (("f32",), "f32", _f32(np.trunc)),
    "v_floor_f32": (("f32",), "f32", _f32(np.floor)),
    "v_ceil_f32": (("f32",), "f32", _f32(np.ceil)),
    "v_ldexp_f32": (("f32", "i32"), "f32", _f32(lambda a, b: np.ldexp(a, np.clip(b, -512, 512)))),
    "v_exp_f32": (("f32",), "f32", lambda a: _round_f64_to_f32(np.exp2(a.astype(np.float64)))),
    "v_rcp_f32": (("f32",), "f32", lambda a: _round_f64_to_f32(1.0 / a.astype(np.float64))),
    "v_sqrt_f32": (("f32",), "f32", lambda a: _round_f64_to_f32(np.sqrt(a.astype(np.float64)))),
    "v_cvt_f32_i32": (("i32",), "f32", lambda a: a.astype(np.float32)),
    "v_cvt_f32_u32": (("u32",), "f32", lambda a: a.astype(np.float32)),
    "v_cvt_i32_f32": (("f32",), "i32", _cvt_i32_f32),
    "v_cvt_u32_f32": (("f32",), "u32", _cvt_u32_f32),
    # f64: IEEE 754 binary64, round to nearest even, denormals kept (the only float mode launched):
    # numpy's float64 arithmetic is that standard's; f32 <-> f64 conversions round to nearest even
    "v_add_f64": (("f64", "f64"), "f64", lambda a, b: _f64(a + b)),
    "v_mul_f64": (("f64", "f64"), "f64", lambda a, b: _f64(a * b)),
    "v_cvt_f64_f32": (("f32",), "f64", lambda a: _f64(a.astype(np.float64))),
    "v_cvt_f32_f64": (("f64",), "f32", lambda a: _round_f64_to_f32(a)),
    "v_cvt_f16_f32": (("f32",), "f16", lambda a: a.astype(np.float16)),
    "v_cvt_f32_f16": (("f16",), "f32", lambda a: a.astype(np.float32)),
    # D.f = (float)S0.u[8n+7:8n] (an unsigned byte, exact in f32)
    **{f"v_cvt_f32_ubyte{n}": (("u32",), "f32", lambda a, n=n: ((a >> _U32(8 * n)) & _U32(0xFF)).astype(np.float32))
       for n in range(4)},
    "v_bfrev_b32": (("u32",), "u32", lambda a: _brev32(a)),  # D.u[31:0] = S0.u[0:31]
}
for _n, _f in {"eq": np.equal, "ne": np.not_equal, "lg": np.not_equal, "lt": np.less, "le": np.less_equal,
               "gt": np.greater, "ge": np.greater_equal}.items():
    for _t in ("i32", "u32", "i64", "u64", "i16", "u16"):
        if _n != "lg":
            VALU_OPS[f"v_cmp_{_n}_{_t}"] = ((_t, _t), "mask", _f)
for _n, _f in {"eq": np.equal, "lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal,
               "lg": lambda a, b: (a < b) | (a > b), "neq": lambda a, b: ~np.equal(a, b),
               "nlt": lambda a, b: ~np.less(a, b), "nle": lambda a, b: ~np.less_equal(a, b),
               "ngt": lambda a, b: ~np.greater(a, b), "nge": lambda a, b: ~np.greater_equal(a, b),
               "nlg": lambda a, b: ~((a < b) | (a > b)), "o": lambda a, b: ~(np.isnan(a) | np.isnan(b)),
               "u": lambda a, b: np.isnan(a) | np.isnan(b)}.items():
    for _t in ("f32", "f64"):  # IEEE comparisons: numpy's on the decoded values (NaN unordered)
        VALU_OPS[f"v_cmp_{_n}_{_t}"] = ((_t, _t), "mask", _f)


# ------------------------------------------------------------------ cross-lane sources (DPP, permlane)

OUT_OF_RANGE, UNDEFINED = -1, -2


def dpp_sources(ctrl: str, value: str, wave: int, gfx9: bool) -> np.ndarray | None:
    """The source lane of every lane for a DPP control (``row_shr``, ``4``), ``OUT_OF_RANGE`` where
    the ISA says "use bound_ctrl", ``UNDEFINED`` where it defines nothing; None for a control this
    target family lacks or the table does not hold. From the DPP_CTRL enumeration of the AMD ISA
    guides (CDNA3 Table 94; RDNA3/4 §DPP16: row_share and row_xmask replace the wave shifts and
    row broadcasts on gfx10+). A row is 16 lanes; ``dpp8`` selects within groups of 8."""
    n = np.arange(wave)
    r = n & 15
    try:
        c = int(value, 0) if value and not value.startswith("[") else None
        sel = [int(x) for x in value.strip("[]").split(",")] if value.startswith("[") else None
    except ValueError:
        return None
    if ctrl == "quad_perm" and sel is not None and len(sel) == 4 and all(0 <= x < 4 for x in sel):
        return (n & ~3) + np.array(sel)[n % 4]
    if ctrl == "dpp8" and not gfx9 and sel is not None and len(sel) == 8 and all(0 <= x < 8 for x in sel):
        return (n & ~7) + np.array(sel)[n % 8]
    if ctrl == "row_mirror" and value == "":
        return (n & ~15) + 15 - r
    if ctrl == "row_half_mirror" and value == "":
        return (n & ~7) + 7 - (n & 7)
    if c is None:
        return None
    if ctrl in ("row_shl", "row_shr", "row_ror") and 1 <= c <= 15:
        if ctrl == "row_shl":
            return np.where(r < 16 - c, n + c, OUT_OF_RANGE)
        if ctrl == "row_shr":
            return np.where(r >= c, n - c, OUT_OF_RANGE)
        return np.where(r >= c, n - c, n + 16 - c)
    if ctrl in ("row_share", "row_newbcast") and 0 <= c <= 15 and (ctrl == "row_share") != gfx9:
        return (n & ~15) + c
    if ctrl == "row_xmask" and 0 <= c <= 15 and not gfx9:
        return (n & ~15) + (r ^ c)
    if gfx9 and wave == 64 and c == 1 and ctrl in ("wave_shl", "wave_rol", "wave_shr", "wave_ror"):
        if ctrl == "wave_shl":
            return np.where(n < 63, n + 1, OUT_OF_RANGE)
        if ctrl == "wave_rol":
            return np.where(n < 63, n + 1, 0)
        if ctrl == "wave_shr":
            return np.where(n > 0, n - 1, OUT_OF_RANGE)
        return np.where(n > 0, n - 1, 63)
    if gfx9 and wave == 64 and ctrl == "row_bcast" and c in (15, 31):
        # lane 15 of the previous row to rows 1-3 / lane 31 to rows 2-3; the lanes before: undefined
        return np.where(n > c, (n & (0x30 if c == 15 else 0x20)) - 1, UNDEFINED)
    return None


def permlane_sources(lo: np.ndarray, hi: np.ndarray, wave: int, cross: bool) -> np.ndarray:
    """``v_permlane16_b32`` / ``v_permlanex16_b32`` (RDNA): lane ``i`` reads lane ``row*16 + s`` of
    its own row (``x16``: of the other row of its pair), where ``s`` is nibble ``i % 16`` of the
    64-bit select ``hi:lo`` (one pair of SGPRs per wave, so ``lo``/``hi`` are per-wave uint32)."""
    n = np.arange(wave)
    sel = (hi.astype(np.uint64) << np.uint64(32)) | lo.astype(np.uint64)  # [waves]
    nib = ((sel[:, None] >> (4 * (n % 16)).astype(np.uint64)[None, :]) & np.uint64(15)).astype(np.int64)
    row = (n // 16) ^ (1 if cross else 0)
    return row[None, :] * 16 + nib


# Ops whose result from a signaling-NaN source the emulator would guess: the guides quiet it (RDNA3
# V_MAX_F32: "if (WAVE_MODE.IEEE && isSignalNAN(S0.f32)) D0.f32 = cvtToQuietNAN(S0.f32)"; IEEE 754
# §7.2 for conversions) without fixing the payload, while numpy's casts and maximum keep the
# signaling NaN. An active lane with such a source is refused (valu.py); arithmetic is not listed:
# numpy's (the host FPU's) add/mul/fma deliver the quiet NaN with the payload, as IEEE 754 §6.2 says.
SNAN_REFUSED = frozenset(m for m in VALU_OPS if m.startswith(("v_cvt_f16_f32", "v_cvt_f32_f16", "v_cvt_f64_f32",
                                                                "v_cvt_f32_f64", "v_max", "v_min"))
                         and any(k in ("f16", "f32", "f64") for k in VALU_OPS[m][0]))
_SNAN = {"f16": (np.uint16, 0x7C00, 0x3FF, 0x200), "f32": (np.uint32, 0x7F800000, 0x7FFFFF, 0x400000),
         "f64": (np.uint64, 0x7FF0000000000000, 0xFFFFFFFFFFFFF, 0x8000000000000)}


def signaling_nan(kind: str, x: np.ndarray) -> np.ndarray | bool:
    """Where ``x`` (of element kind ``kind``) holds a signaling NaN: all-ones exponent, a nonzero
    fraction, the fraction's top (quiet) bit clear."""
    if kind not in _SNAN:
        return False
    ut, e, f, q = _SNAN[kind]
    b = np.asarray(x).view(ut)
    return ((b & ut(e)) == ut(e)) & ((b & ut(f)) != 0) & ((b & ut(q)) == 0)
