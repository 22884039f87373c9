"""Numerics edge campaign: every bit pattern of every narrow float format, NaN, ±Inf, denormals,
fp8 saturation, FNUZ vs OCP, RNE ties, int sign handling and int32 wraparound — through tilesim's
codec (``encode``/``decode``), its register codec (``tilesim.wave.codec``), ``execute_logical``,
``execute_registers`` and ``ts.simulate`` of a one-instruction tile program.

The references are independent of tilesim and of the library it uses (ml_dtypes): bit-level
decoders and a round-to-nearest-even encoder written from the format specifications
(``tests/_bitcodecs.py``: IEEE 754, OFP8 rev 1.0, the FNUZ definitions, OCP MX v1.0), constants read
off those specifications, exact float64 or Python-integer arithmetic, and a rounding function
written from the IEEE definition in exact rationals. A self-check runs the codec cases again with
FNUZ and OCP swapped inside tilesim and requires every fp8 case to fail.

    python tools/numerics_edges.py            # full campaign -> tools/numerics_edges_results.json
    python tools/numerics_edges.py --quick    # CI slice (tests/test_numerics_edges.py)

Exit status 1 when any case fails. ``known_divergences`` in the JSON lists behaviour the ISA
documents that the model does not follow (reported, not counted as failures).
"""

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import tilesim as ts  # noqa: E402
from tests import _bitcodecs as bc  # noqa: E402  (decoders written from the format specifications)
from tilesim.layouts import Layout  # noqa: E402
from tilesim.matrix import dtypes as _dtypes  # noqa: E402
from tilesim.matrix import lookup  # noqa: E402
from tilesim.matrix.dtypes import decode, encode  # noqa: E402
from tilesim.matrix.numerics import execute_logical, quantize  # noqa: E402
from tilesim.matrix.registers import execute_registers  # noqa: E402
from tilesim.wave.codec import codec as wave_codec  # noqa: E402

# Sources, each found and read for this campaign (docs/reliability.md lists them with links)
OCP = ("OCP 8-bit Floating Point Specification (OFP8) rev 1.0 / arXiv:2209.05433: E4M3 has no Inf and one NaN "
       "mantissa per sign (S.1111.111); E5M2 is IEEE-like with ±Inf")
FNUZ = ("FNUZ formats (arXiv:2206.02915; StableHLO RFC 20230321-fp8_fnuz; LLVM APFloat Float8E4M3FNUZ/E5M2FNUZ): "
        "bias one higher, no Inf, no -0, the one NaN is 0x80; CDNA3 (gfx942) fp8/bf8 are FNUZ, CDNA4 (gfx950) OCP "
        "(AMD ROCm blog 'Matrix Core Programming on AMD CDNA3 and CDNA4')")
IEEE = ("IEEE 754-2019: roundTiesToEven, overflow to ±Inf, NaN propagation, invalid operation (Inf·0, Inf-Inf) "
        "gives NaN")
MX = ("OCP Microscaling Formats (MX) v1.0 §5.3: FP6 E2M3/E3M2 and FP4 E2M1 have no Inf or NaN (overflow "
      "saturates here); E8M0 is 2^(e-127), 0xFF NaN")
SPEC = "bit-level decoder/encoder written from the format specification (tests/_bitcodecs.py)"
WRAP = ("two's complement int32 accumulation; the clamp operand of the integer WMMA builtins (clang "
        "docs/AMDGPUBuiltins.rst 'Integer WMMA': 'clamp: if true, saturate the result') is 0 in tilesim's programs, "
        "so results wrap modulo 2**32")
SIGN = ("clang docs/AMDGPUBuiltins.rst 'Integer WMMA': a_sign/b_sign 'if true, treat operand as signed' (NEG bits "
        "of v_wmma_i32_*_iu8/iu4); MFMA *_i8 operands are signed")
FLOAT_NAMES = ["f16", "bf16", "fp8_ocp", "bf8_ocp", "fp8_fnuz", "bf8_fnuz", "fp6", "bf6", "fp4"]
# Per format, read off its specification (not computed): NaN patterns, infinity patterns, negative
# zeros, largest finite value, smallest positive subnormal.
SPEC_FACTS = {
    "f16": (2 * 1023, 2, 1, 65504.0, 2.0 ** -24),
    "bf16": (2 * 127, 2, 1, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -133),
    "fp8_ocp": (2, 0, 1, 448.0, 2.0 ** -9),
    "bf8_ocp": (6, 2, 1, 57344.0, 2.0 ** -16),
    "fp8_fnuz": (1, 0, 0, 240.0, 2.0 ** -10),
    "bf8_fnuz": (1, 0, 0, 57344.0, 2.0 ** -17),
    "fp6": (0, 0, 1, 7.5, 2.0 ** -3),
    "bf6": (0, 0, 1, 28.0, 2.0 ** -4),
    "fp4": (0, 0, 1, 6.0, 2.0 ** -1),
    "e8m0": (1, 0, 0, 2.0 ** 127, 2.0 ** -127),  # no subnormals: the smallest value, 2^-127 at 0x00
}


def _source(name: str) -> str:
    return SPEC + "; " + (OCP if "ocp" in name else FNUZ if "fnuz" in name else MX if name in ("fp6", "bf6", "fp4",
                          "e8m0") else IEEE)


class Campaign:
    def __init__(self) -> None:
        self.cases: list[dict] = []

    def check(self, group: str, name: str, got: object, want: object, source: str, via: str = "codec") -> None:
        ok = _same(got, want)
        self.cases.append({"group": group, "case": name, "via": via, "ok": ok, "got": _show(got), "want": _show(want),
                           "source": source})

    def check_bits(self, group: str, name: str, got: np.ndarray, want: np.ndarray, fmt: str, via: str = "codec") -> None:
        """Bit patterns equal, byte for byte, except that where the spec's answer is a NaN any NaN
        pattern of the format is right (OFP8 E5M2 and IEEE formats have several)."""
        got, want = np.asarray(got, np.int64), np.asarray(want, np.int64)
        spec_nan = (want >= 0) & bc.is_nan_pattern(np.maximum(want, 0), fmt)
        got_nan = (got >= 0) & (got < (1 << bc.FORMATS[fmt].bits)) & bc.is_nan_pattern(
            np.clip(got, 0, (1 << bc.FORMATS[fmt].bits) - 1), fmt)
        ok = np.where(spec_nan, got_nan, got == want) | (want < 0)  # -1: the spec has no pattern (NaN in FP6/FP4)
        bad = np.flatnonzero(~ok)
        self.cases.append({"group": group, "case": name, "via": via, "ok": bool(ok.all()),
                           "got": _show(got[bad][:8]) if bad.size else f"{got.size} patterns",
                           "want": _show(want[bad][:8]) if bad.size else f"{want.size} patterns",
                           "mismatches": int(bad.size), "source": _source(fmt)})


def _same(a: object, b: object) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        a, b = a.astype(np.float64), b.astype(np.float64)
        return bool(np.all((a == b) & (np.signbit(a) == np.signbit(b)) | (np.isnan(a) & np.isnan(b))))
    return bool(np.array_equal(a, b))


def _show(x: object) -> object:
    a = np.asarray(x)
    if a.size > 8:
        return f"array{a.shape}"
    a = a.astype(np.int64) if a.dtype.kind in "iub" else a.astype(np.float64)
    return a.tolist()


def _enc(values: np.ndarray, name: str) -> np.ndarray:
    """tilesim's encode, as int64 patterns."""
    with np.errstate(over="ignore", invalid="ignore"):
        return encode(np.asarray(values, np.float64), name).astype(np.int64)


# ------------------------------------------------------------------------------------------ codec

def codec_cases(c: Campaign, quick: bool) -> None:
    for name in FLOAT_NAMES:
        f = bc.FORMATS[name]
        pats = np.arange(1 << f.bits)
        spec_vals = bc.decode(pats, name)
        # every bit pattern, decoded by tilesim and by the decoder written from the spec
        c.check("bit patterns", f"{name}: all {pats.size} bit patterns decode as the specification says",
                decode(pats.astype(np.uint64), name), spec_vals, _source(name))
        n_nan, n_inf, n_negz, mx, sub = SPEC_FACTS[name]
        got = decode(pats.astype(np.uint64), name)
        fin = got[np.isfinite(got)]
        c.check("special values", f"{name}: NaN patterns, Inf patterns, negative zeros, max, smallest subnormal",
                [int(np.isnan(got).sum()), int(np.isinf(got).sum()), int(np.sum((got == 0) & np.signbit(got))),
                 float(fin.max()), float(fin[fin > 0].min())], [n_nan, n_inf, n_negz, mx, sub], _source(name))
        # every value the format holds encodes back to its own pattern (NaN patterns: to a NaN pattern)
        c.check_bits("bit patterns", f"{name}: every pattern's value encodes back to that pattern, byte for byte",
                     _enc(spec_vals, name), np.where(np.isnan(spec_vals), bc.encode(spec_vals, name), pats), name)
        specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, sub, -sub, sub / 2, -sub / 2, sub * 0.75,
                             sub * 1.5, mx, -mx, 1e300, -1e300, 2.0 ** -1000], np.float64)
        c.check_bits("special values", f"{name}: NaN, ±Inf, ±0, subnormals, max, huge and tiny -> bits", _enc(specials, name),
                     bc.encode(specials, name), name)
        # ties: the exact midpoint between every pair of neighbouring finite values
        s = np.unique(spec_vals[np.isfinite(spec_vals)])
        mids = (s[1:] + s[:-1]) / 2
        if quick and mids.size > 4096:
            mids = mids[:: mids.size // 4096]
        c.check_bits("round to nearest even", f"{name}: {mids.size} exact midpoints (ties) go to the even neighbour",
                     _enc(mids, name), bc.encode(mids, name), name)
        # one float64 ulp either side of each tie: a single rounding must go away from the tie
        # (rounding through float32 first lands on the tie and then goes to even: double rounding)
        near = np.concatenate([np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
        c.check_bits("round to nearest even", f"{name}: one float64 ulp off each tie rounds to the nearer side "
                     "(no double rounding)", _enc(near, name), bc.encode(near, name), name)
        # overflow: values past max, at and around the midpoint above it
        top = s[s > 0]
        step = float(top[-1] - top[-2])
        over = np.array([mx + step * 0.25, mx + step * 0.5, np.nextafter(mx + step * 0.5, np.inf), mx + step,
                         mx * 4, -mx * 4, -(mx + step * 0.5)], np.float64)
        c.check_bits("saturation and overflow", f"{name}: values beyond max (non-saturating conversion)",
                     _enc(over, name), bc.encode(over, name), name)
        # the register codec of the simulator (tilesim.wave.codec) reads and writes the same bits
        _register_codec_cases(c, name, pats, spec_vals)
    # E8M0 (block scales of the scaled MFMA): decode only, it has no sign and no zero
    pats = np.arange(256)
    got = decode(pats.astype(np.uint64), "e8m0")
    c.check("bit patterns", "e8m0: all 256 bit patterns decode as the specification says", got,
            bc.decode(pats, "e8m0"), _source("e8m0"))
    n_nan, _, _, mx, lo = SPEC_FACTS["e8m0"]
    c.check("special values", "e8m0: one NaN (0xff), no zero, values 2^-127 .. 2^127",
            [int(np.isnan(got).sum()), int(np.sum(got == 0)), float(np.nanmax(got)), float(np.nanmin(got))],
            [n_nan, 0, mx, lo], _source("e8m0"))
    # FNUZ vs OCP: the same bits, different meanings (values read off the specifications)
    for bits, fnuz, ocp in [(0x80, math.nan, -0.0), (0x7F, 240.0, math.nan), (0xFF, -240.0, math.nan),
                            (0x40, 1.0, 2.0), (0x01, 2.0 ** -10, 2.0 ** -9)]:
        c.check("FNUZ vs OCP", f"e4m3 bits {bits:#04x}: FNUZ {fnuz}, OCP {ocp}",
                [decode(np.array([bits], np.uint64), "fp8_fnuz")[0], decode(np.array([bits], np.uint64), "fp8_ocp")[0]],
                [fnuz, ocp], FNUZ + "; " + OCP)
    for bits, fnuz, ocp in [(0x7C, 32768.0, math.inf), (0x80, math.nan, -0.0), (0x3C, 0.5, 1.0)]:
        c.check("FNUZ vs OCP", f"e5m2 bits {bits:#04x}: FNUZ {fnuz}, OCP {ocp}",
                [decode(np.array([bits], np.uint64), "bf8_fnuz")[0], decode(np.array([bits], np.uint64), "bf8_ocp")[0]],
                [fnuz, ocp], FNUZ + "; " + OCP)
    for name in ("fp8_fnuz", "bf8_fnuz"):
        c.check("FNUZ vs OCP", f"{name}: -0.0, NaN, ±Inf, -tiny encode to 0x00, 0x80, 0x80, 0x80, 0x00",
                _enc(np.array([-0.0, np.nan, np.inf, -np.inf, -1e-30]), name), np.array([0, 0x80, 0x80, 0x80, 0]),
                FNUZ)
    # integers: two's complement sign, and wrapping of out-of-range host values
    for name, bits in (("i8", 8), ("i4", 4), ("u8", 8), ("u4", 4), ("i32", 32)):
        signed = name[0] == "i"
        vals = np.array([-1, -(1 << (bits - 1)), (1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 1, 1 << bits],
                        np.int64)
        half = 1 << (bits - 1)
        want = ((vals % (1 << bits)) + half) % (1 << bits) - half if signed else vals % (1 << bits)
        c.check("integers", f"{name}: two's complement, out-of-range values wrap modulo 2**{bits}",
                decode(encode(vals, name), name), want, "two's complement; " + (SIGN if bits < 32 else WRAP))
        if bits < 32:
            pats = np.arange(1 << bits)
            want_v = np.where(pats >= half, pats - (1 << bits), pats) if signed else pats
            c.check("bit patterns", f"{name}: all {pats.size} bit patterns decode as two's complement"
                    if signed else f"{name}: all {pats.size} bit patterns decode as unsigned",
                    decode(pats.astype(np.uint64), name), want_v, "two's complement; " + SIGN)
            _register_codec_cases(c, name, pats, want_v.astype(np.float64))


def _register_codec_cases(c: Campaign, name: str, pats: np.ndarray, values: np.ndarray) -> None:
    """Pack every pattern into registers by hand — element ``s`` of a lane at bits ``[s·w, s·w + w)``
    of the lane's VGPRs concatenated little-endian, as AMD's ISA packs sub-dword operands — and
    require ``tilesim.wave.codec`` to read exactly the spec's values and to write exactly these bytes."""
    w = _dtypes.dtype(name).reg_bits
    lanes = {16: 64, 8: 32, 6: 4, 4: 2}[w]  # 6-bit: 16 per lane, so elements straddle VGPRs
    slots = pats.size // lanes
    nregs = -(-slots * w // 32)
    regs = np.zeros((lanes, nregs), np.uint32)
    for lane in range(lanes):
        word = 0
        for s in range(slots):
            word |= int(pats[lane * slots + s]) << (s * w)
        for r in range(nregs):
            regs[lane, r] = (word >> (32 * r)) & 0xFFFFFFFF
    hw = np.array([(ln, s) for ln in range(lanes) for s in range(slots)])
    lay = Layout.from_pairs({"lane": lanes, "slot": slots}, {"row": lanes, "col": slots}, hw, hw, elem_bits=w)
    cod = wave_codec(lay, name, nregs)
    tile, bad = cod.tile(regs)
    c.check("register codec", f"{name}: registers packed by hand decode through tilesim.wave.codec as the spec says",
            tile.reshape(-1), values, _source(name) if name in bc.FORMATS else "two's complement", via="register codec")
    finite = ~np.isnan(values)
    regs_want = np.where(finite.reshape(lanes, slots).all(1)[:, None], regs, 0)  # lanes holding a NaN are skipped
    keep = finite.reshape(lanes, slots).all(1)
    written = cod.from_tile(np.where(finite, values, 0).reshape(lanes, slots))
    c.check("register codec", f"{name}: tilesim.wave.codec writes those values back as the same register bytes",
            np.asarray(written)[keep].view(np.uint8), regs_want[keep].view(np.uint8),
            _source(name) if name in bc.FORMATS else "two's complement", via="register codec")


def _ieee_round(x: float, p: int, emax_pow: int, emin_sub: int) -> float:
    """``x`` rounded to nearest, ties to even, into a binary format with ``p`` significand bits,
    values below ``2**emax_pow`` and smallest subnormal ``2**emin_sub``; ±Inf past the midpoint
    above max (IEEE 754-2019 §7.4). Written from the definition, in exact rational arithmetic."""
    from fractions import Fraction

    if x == 0:
        return x
    q = Fraction(abs(x))
    e = q.numerator.bit_length() - q.denominator.bit_length()
    while Fraction(2) ** e > q:  # e = floor(log2 q)
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    ulp = Fraction(2) ** max(e - p + 1, emin_sub)  # fixed below the normal range: subnormals
    n, r = divmod(q, ulp)
    if r > ulp / 2 or (r == ulp / 2 and n % 2 == 1):
        n += 1
    v = n * ulp
    mx = (Fraction(2) ** emax_pow) * (1 - Fraction(1, 2 ** p))
    if v > mx:
        return math.copysign(math.inf, x)
    return math.copysign(float(v), x)


# ------------------------------------------------------------------------------------------ simulated mma

def _spec_round(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` rounded to ``name`` by the spec encoder (f32: numpy's IEEE binary32 cast), as float64."""
    x = np.asarray(x, np.float64)
    if name == "f32":
        with np.errstate(over="ignore", invalid="ignore"):
            return x.astype(np.float32).astype(np.float64)
    return bc.decode(bc.encode(x, name), name)


def _one_mma(ta: str, tb: str, tc: str):
    @ts.kernel
    def one_mma(A: ts.Tensor[ta, "M", "K"], B: ts.Tensor[tb, "K", "N"], C: ts.Tensor[tc, "M", "N"],
                D: ts.Tensor[tc, "M", "N"], *, mma="v_wmma_f32_16x16x16_f16", neg=0):
        op = ts.mma_op(mma)
        a = ts.load(A[0:, 0:], op.layout("A"))
        b = ts.load(B[0:, 0:], op.layout("B"))
        acc = ts.load(C[0:, 0:], op.layout("C"))
        ts.store(D[0:, 0:], ts.mma(op, a, b, acc, **({"neg": neg} if neg else {})))

    return one_mma


def _simulate(target: str, mnemonic: str, A, B, C, neg: int = 0) -> np.ndarray:
    row = lookup(mnemonic, target)
    ta, tb, tc, _ = row.types
    prog = _one_mma(ta, tb, tc).specialize(target=target, M=row.m, N=row.n, K=row.k, mma=mnemonic, neg=neg)
    return np.asarray(ts.simulate(prog, A=A, B=B, C=C)["D"])


def mma_cases(c: Campaign, quick: bool) -> None:
    rng = np.random.default_rng(7)
    float_rows = [("gfx1201", "v_wmma_f32_16x16x16_f16"), ("gfx1201", "v_wmma_f16_16x16x16_f16"),
                  ("gfx1201", "v_wmma_bf16_16x16x16_bf16"), ("gfx942", "v_mfma_f32_16x16x16_f16")]
    if not quick:
        float_rows += [("gfx1201", "v_wmma_f32_16x16x16_bf16"), ("gfx942", "v_mfma_f32_16x16x16_bf16"),
                       ("gfx942", "v_mfma_f32_16x16x32_fp8_fp8"), ("gfx950", "v_mfma_f32_16x16x32_fp8_fp8"),
                       ("gfx1201", "v_wmma_f32_16x16x16_fp8_fp8"), ("gfx1201", "v_wmma_f32_16x16x16_bf8_bf8"),
                       ("gfx1100", "v_wmma_f32_16x16x16_f16"), ("gfx942", "v_mfma_f32_16x16x4_f32")]
    for target, mn in float_rows:
        row = lookup(mn, target)
        M, N, K = row.m, row.n, row.k
        ta, tb, tc, td = row.types
        A = quantize(rng.integers(-4, 5, (M, K)) / 4, ta)
        B = quantize(rng.integers(-4, 5, (K, N)) / 4, tb)
        C = quantize(rng.integers(-4, 5, (M, N)) / 4, tc)
        k3, k5 = min(3, K - 1), min(5, K - 1)
        A[1, k3] = np.nan                     # NaN poisons row 1 only
        A[2, :] = 0.0
        A[2, k5] = np.inf if ta not in ("fp8_fnuz", "bf8_fnuz", "fp8_ocp") else np.nan  # inf·(±x) and inf·0
        B[k5, 0] = 0.0
        C[4, 4] = np.inf if tc != "fp8_fnuz" else np.nan
        C[4, 5] = -np.inf
        A[4, :] = 0.0
        A[4, 0], B[0, 5] = 1.0, np.inf if tb not in ("fp8_fnuz", "bf8_fnuz", "fp8_ocp") else 1.0   # +Inf + -Inf
        got = _simulate(target, mn, A, B, C)
        qa, qb, qc = _spec_round(A, ta), _spec_round(B, tb), _spec_round(C, tc)  # rounded by the spec encoder
        with np.errstate(invalid="ignore", over="ignore"):
            want_nan = np.isnan(qa @ qb + qc)  # float64: which outputs IEEE makes NaN (Inf·0, Inf-Inf, NaN in)
        c.check("NaN and Inf through mma", f"{target} {mn}: NaN exactly where IEEE float64 gives NaN "
                f"({int(want_nan.sum())} of {want_nan.size})", np.isnan(got), want_nan, IEEE, via="simulated mma")
        fin = ~want_nan
        with np.errstate(invalid="ignore", over="ignore"):
            ref = qa @ qb + qc
        ref_inf = np.isinf(ref) & fin
        c.check("NaN and Inf through mma", f"{target} {mn}: ±Inf where float64 gives ±Inf",
                got[ref_inf], ref[ref_inf], IEEE, via="simulated mma")
        # ties in the output type: exact sum 1 + half an ulp (even: down) and 1 + 3/2 ulp (odd: up)
        if td in ("f16", "bf16"):
            p = {"f16": 11, "bf16": 8}[td]
            A2, B2, C2 = np.zeros((M, K)), np.zeros((K, N)), np.zeros((M, N))
            A2[0, 0], A2[0, 1], B2[0, 0], B2[1, 0] = 1.0, 2.0 ** -p, 1.0, 1.0          # 1 + 2^-p: tie, stays 1
            A2[1, 0], A2[1, 1], B2[0, 1], B2[1, 1] = 1.0, 3 * 2.0 ** -p, 1.0, 1.0      # 1 + 3·2^-p: tie, goes up
            A2[2, 0], A2[2, 1], A2[2, 2] = 1.0, 2.0 ** -p, 2.0 ** -(p + 12)            # just above the tie: up
            B2[2, 2] = 1.0
            B2[0, 2], B2[1, 2] = 1.0, 1.0
            got = _simulate(target, mn, quantize(A2, ta), quantize(B2, tb), C2)
            ulp = 2.0 ** (1 - p)
            c.check("round to nearest even", f"{target} {mn}: {td} output ties and near-ties",
                    [got[0, 0], got[1, 1], got[2, 2]], [1.0, 1.0 + 2 * ulp, 1.0 + ulp], IEEE + " (one rounding of "
                    "the exact sum, tilesim's model)", via="simulated mma")
        # denormal inputs are kept, not flushed (f16/bf16 smallest subnormal times 1)
        if ta in ("f16", "bf16") and td == "f32":
            sub = SPEC_FACTS[ta][4]
            A3, B3 = np.zeros((M, K)), np.zeros((K, N))
            A3[0, 0], B3[0, 0] = sub, 1.0
            A3[1, 0], B3[0, 1] = sub, sub  # product underflows f32: exact 2^-48 (f16) rounds once
            got = _simulate(target, mn, A3, B3, np.zeros((M, N)))
            want = [sub, float(np.float32(sub * sub))]
            c.check("denormals", f"{target} {mn}: {ta} subnormal inputs kept; tiny products rounded once to f32",
                    [got[0, 0], got[1, 1]], want, IEEE + " (subnormals kept: tilesim's model on every target; "
                    "MI200 is documented to flush, see known_divergences)", via="simulated mma")
    # overflow of finite inputs in the accumulator / output type: IEEE rounding, so ±Inf past the
    # midpoint above max and max below it (one rounding of the exact sum)
    f32max = float(np.finfo(np.float32).max)
    A5, B5, C5 = np.zeros((16, 4)), np.zeros((4, 16)), np.zeros((16, 16))
    A5[0, 0], B5[0, 0] = 2.0 ** 64, 2.0 ** 64                      # 2^128: past f32 max
    A5[1, 0], B5[0, 1], C5[1, 1] = f32max, 1.0, f32max             # max + max
    A5[2, 0], B5[0, 2] = 2.0 ** 64, -(2.0 ** 64)                   # -2^128
    A5[3, 0], B5[0, 3], C5[3, 3] = 2.0 ** 103, 1.0, f32max         # max + half an ulp of max: a tie, to even (Inf)
    A5[4, 0], B5[0, 4], C5[4, 4] = 2.0 ** 102, 1.0, f32max         # max + a quarter ulp: stays max
    A5[5, 0], B5[0, 5] = 2.0 ** -75, 2.0 ** -75                    # 2^-150: half the smallest subnormal, a tie to 0
    A5[6, 0], B5[0, 6] = 2.0 ** -70, 2.0 ** -70                    # 2^-140: an f32 subnormal, kept
    got = _simulate("gfx942", "v_mfma_f32_16x16x4_f32", A5, B5, C5)
    exact = [2.0 ** 128, 2 * f32max, -(2.0 ** 128), f32max + 2.0 ** 103, f32max + 2.0 ** 102, 2.0 ** -150, 2.0 ** -140]
    want = [_ieee_round(x, 24, 128, -149) for x in exact]
    c.check("saturation and overflow", "gfx942 v_mfma_f32_16x16x4_f32: finite inputs whose exact sum is past f32 "
            "max give ±Inf, below the midpoint max; f32 underflow ties and subnormals", np.diag(got)[:7], want, IEEE,
            via="simulated mma")
    with np.errstate(over="ignore"):
        np32 = np.array(exact).astype(np.float32).astype(np.float64)
    c.check("saturation and overflow", "the f32 overflow reference agrees with numpy's float64 -> float32", want, np32,
            IEEE)
    A6, B6 = np.zeros((16, 16)), np.zeros((16, 16))
    A6[0, 0], B6[0, 0] = 256.0, 256.0                          # 65536: past the midpoint 65520 -> Inf
    A6[1, 0], B6[0, 1] = 255.0, 257.0                          # 65535 -> Inf
    A6[2, 0], B6[0, 2], A6[2, 1], B6[1, 2] = 65504.0, 1.0, 8.0, 1.0    # 65512 -> 65504
    A6[3, 0], B6[0, 3], A6[3, 1], B6[1, 3] = 65504.0, 1.0, 16.0, 1.0   # 65520: tie; 65504 is odd -> Inf
    A6[4, 0], B6[0, 4] = -256.0, 256.0                         # -65536 -> -Inf
    got = _simulate("gfx1201", "v_wmma_f16_16x16x16_f16", A6, B6, np.zeros((16, 16)))
    exact = [65536.0, 65535.0, 65512.0, 65520.0, -65536.0]
    c.check("saturation and overflow", "gfx1201 v_wmma_f16_16x16x16_f16: f16 output past max is ±Inf (ties to "
            "even at 65520), below the midpoint 65504", np.diag(got)[:5], [_ieee_round(x, 11, 16, -24) for x in exact],
            IEEE + "; numpy float16 agrees", via="simulated mma")
    with np.errstate(over="ignore"):
        np16 = np.array(exact).astype(np.float16).astype(np.float64)
    c.check("saturation and overflow", "the f16 overflow reference agrees with numpy's float64 -> float16",
            [_ieee_round(x, 11, 16, -24) for x in exact], np16, IEEE)
    # fp8/bf8 subnormal inputs through mma: the products are exact in f32, nothing is flushed
    for target, mn, name in [("gfx942", "v_mfma_f32_16x16x32_fp8_fp8", "fp8_fnuz"),
                             ("gfx950", "v_mfma_f32_16x16x32_fp8_fp8", "fp8_ocp"),
                             ("gfx1201", "v_wmma_f32_16x16x16_bf8_bf8", "bf8_ocp")][: 1 if quick else 3]:
        row = lookup(mn, target)
        sub = SPEC_FACTS[name][4]
        A7, B7 = np.zeros((row.m, row.k)), np.zeros((row.k, row.n))
        A7[0, 0], B7[0, 0], A7[1, 0], B7[0, 1] = sub, sub, sub, 1.0
        got = _simulate(target, mn, A7, B7, np.zeros((row.m, row.n)))
        c.check("denormals", f"{target} {mn}: {name} smallest subnormal ({sub:g}) squared and times 1, exact in f32",
                [got[0, 0], got[1, 1]], [sub * sub, sub], (FNUZ if "fnuz" in name else OCP) + "; " + SPEC
                + "; exact float64 products", via="simulated mma")
    # fp8: the same register bytes on an FNUZ and an OCP target. 0x80 is NaN in FNUZ and -0 in OCP;
    # 0x40 is 1.0 in FNUZ e4m3 (bias 8) and 2.0 in OCP e4m3 (bias 7). The A and B registers are filled
    # with one byte everywhere (so no layout is involved), C is zero, and D's registers are read as
    # IEEE binary32; the expected value is the float64 dot product of the spec-decoded bytes.
    for target, mn, name in ([("gfx942", "v_mfma_f32_16x16x32_fp8_fp8", "fp8_fnuz"),
                              ("gfx950", "v_mfma_f32_16x16x32_fp8_fp8", "fp8_ocp")]
                             + ([] if quick else [("gfx1201", "v_wmma_f32_16x16x16_fp8_fp8", "fp8_ocp")])):
        row = lookup(mn, target)
        nreg = row.registers_for()
        lanes = row.wave_sizes[0]  # the wave registers_for() above counts for
        for a_byte, b_byte in ((0x80, 0x40), (0x40, 0x40)):
            fill = lambda byte, op: np.full((lanes, nreg[op]), byte * 0x01010101, np.uint32)  # noqa: E731
            d = execute_registers(row, fill(a_byte, "A"), fill(b_byte, "B"), np.zeros((lanes, nreg["C"]), np.uint32))
            got = np.asarray(d, np.uint32).view(np.float32).astype(np.float64)
            av, bv = bc.decode(np.array([a_byte]), name)[0], bc.decode(np.array([b_byte]), name)[0]
            want = float(np.add.reduce(np.full(row.k, av * bv))) + 0.0  # K equal products, plus C = +0
            c.check("FNUZ vs OCP", f"{target} {mn}: A registers all bytes {a_byte:#04x}, B all {b_byte:#04x} "
                    f"({name}: {av} x {bv}) give D = {want} in every element", got, np.full(got.shape, want),
                    (FNUZ if name == "fp8_fnuz" else OCP) + "; " + SPEC + "; IEEE binary32 D registers",
                    via="register-level mma")
    # integers: signedness and int32 wraparound, through execute_logical and the simulator
    int_rows = [("gfx942", "v_mfma_i32_16x16x32_i8", 0), ("gfx1201", "v_wmma_i32_16x16x16_iu8", 3),
                ("gfx1201", "v_wmma_i32_16x16x16_iu8", 0), ("gfx1201", "v_wmma_i32_16x16x16_iu4", 3)]
    if not quick:
        int_rows += [("gfx1201", "v_wmma_i32_16x16x16_iu4", 0), ("gfx1100", "v_wmma_i32_16x16x16_iu8", 1),
                     ("gfx90a", "v_mfma_i32_16x16x16i8", 0), ("gfx950", "v_mfma_i32_16x16x64_i8", 0)]
    for target, mn, neg in int_rows:
        row = lookup(mn, target)
        M, N, K = row.m, row.n, row.k
        bits = 4 if row.types[0] in ("u4", "i4") else 8
        signed_a = row.types[0].startswith("i") or bool(neg & 1)
        signed_b = row.types[1].startswith("i") or bool(neg & 2)
        lo, hi = -(1 << (bits - 1)), (1 << bits) - 1
        A = rng.integers(lo, hi + 1, (M, K))
        B = rng.integers(lo, hi + 1, (K, N))
        A[0, :] = lo   # most negative (or, read unsigned, a large positive)
        B[:, 0] = lo
        C = rng.integers(-(2 ** 31), 2 ** 31, (M, N))
        C[0, 0] = 2 ** 31 - 1  # any positive product sum wraps past INT32_MAX
        def as_read(x, s):
            raw = np.asarray(x) % (1 << bits)
            return np.where(raw >= (1 << (bits - 1)), raw - (1 << bits), raw) if s else raw
        exact = as_read(A, signed_a) @ as_read(B, signed_b) + C  # Python-int exact via int64 (no overflow here)
        want = (exact + 2 ** 31) % 2 ** 32 - 2 ** 31
        via_logical = execute_logical(row, A % (1 << bits) if not row.types[0].startswith("i") else A,
                                      B % (1 << bits) if not row.types[1].startswith("i") else B, C, neg=neg)
        # the same bits as values the tensor's type holds (the simulator refuses an i8 given 211)
        a_in, b_in = as_read(A, row.types[0].startswith("i")), as_read(B, row.types[1].startswith("i"))
        got = _simulate(target, mn, a_in, b_in, C, neg=neg)
        sa = "signed" if signed_a else "unsigned"
        c.check("integers", f"{target} {mn} neg={neg}: A {sa}, int32 wraps ({int((exact != want).sum())} "
                f"elements wrap)", via_logical, want, SIGN + "; " + WRAP, via="execute_logical")
        c.check("integers", f"{target} {mn} neg={neg}: same through the simulator", got, want, SIGN + "; " + WRAP,
                via="simulated mma")


@contextlib.contextmanager
def swapped_fp8_flavours():
    """tilesim's dtype table with FNUZ and OCP exchanged (fp8_fnuz decodes as OCP E4M3 and so on):
    the deliberate bug the campaign's self-check must catch."""
    rows = dict(_dtypes.DTYPES)
    swap = {"fp8_fnuz": "fp8_ocp", "fp8_ocp": "fp8_fnuz", "bf8_fnuz": "bf8_ocp", "bf8_ocp": "bf8_fnuz"}
    for a, b in swap.items():
        _dtypes.DTYPES[a] = dataclasses.replace(rows[a], np_name=rows[b].np_name)
    wave_codec.cache_clear()
    try:
        yield
    finally:
        _dtypes.DTYPES.update(rows)
        wave_codec.cache_clear()


def self_check(c: Campaign, quick: bool) -> None:
    """Run the codec cases with FNUZ and OCP swapped inside tilesim: every exhaustive fp8/bf8 case
    (decode, encode round trip, register codec) and every FNUZ-vs-OCP decode case must fail."""
    swapped = Campaign()
    with swapped_fp8_flavours():
        codec_cases(swapped, quick)
    fp8 = ("fp8_", "bf8_")
    must = [x for x in swapped.cases if (x["group"] in ("bit patterns", "register codec") and x["case"].startswith(fp8))
            or (x["group"] == "FNUZ vs OCP" and x["case"].startswith(("e4m3", "e5m2")))]
    caught = [x for x in must if not x["ok"]]
    others = [x for x in swapped.cases if not x["ok"] and x not in must]
    c.check("self-check", f"FNUZ and OCP swapped in tilesim's dtype table: {len(caught)} of {len(must)} exhaustive "
            f"fp8/bf8 and FNUZ-vs-OCP cases fail (and {len(others)} more)", len(caught), len(must),
            "the campaign must detect a deliberate flavour swap (issue 19 item 7)", via="self-check")


KNOWN_DIVERGENCES = [
    {"what": "gfx90a (MI200) v_mfma_*f16 / *bf16 / *bf16_1k flush subnormal inputs and outputs to zero; "
             "tilesim's model keeps them (IEEE), on every target",
     "source": "ROCm MIOpen docs, 'MI200 matrix fused multiply-add (MFMA) behavior specifics': 'MFMA_F16, "
               "MFMA_BF16, and MFMA_BF16_1K flush subnormal input/output data to zero' "
               "(https://rocm.docs.amd.com/projects/MIOpen/en/latest/conceptual/MI200-alt-implementation.html)",
     "effect": "a device run on gfx90a with f16/bf16 subnormals would differ from the simulator; not run on AMD "
               "hardware here"},
    {"what": "the CLAMP bit of integer WMMA/MFMA (saturate to int32 instead of wrapping) is not modelled or "
             "emitted: tilesim programs always run with CLAMP=0",
     "source": "clang docs/AMDGPUBuiltins.rst, 'Integer WMMA': __builtin_amdgcn_wmma_i32_16x16x16_iu8_w32(a_sign, "
               "a, b_sign, b, c, clamp), 'clamp: if true, saturate the result'",
     "effect": "none for tilesim programs (the generator passes clamp=0); a hand-written kernel with clamp=1 "
               "saturates where tilesim wraps"},
    {"what": "fp8 conversion on the device (v_cvt_pk_fp8_f32 with its clamp/saturate option) is not modelled; "
             "tilesim quantises host inputs with the non-saturating rule (ml_dtypes)",
     "source": "__builtin_amdgcn_cvt_pk_fp8_f32 (HIP amd_hip_ocp_fp_cxx.hpp; clang builtins for gfx942/gfx950); "
               "OFP8 rev 1.0 defines saturating and non-saturating conversion",
     "effect": "values beyond the fp8 max become NaN/Inf in tilesim where a saturating device conversion "
               "would give ±max"},
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="the CI slice")
    ap.add_argument("--out", default=str(Path(__file__).with_name("numerics_edges_results.json")))
    args = ap.parse_args(argv)
    t0 = time.time()
    c = Campaign()
    codec_cases(c, args.quick)
    mma_cases(c, args.quick)
    self_check(c, args.quick)
    fails = [x for x in c.cases if not x["ok"]]
    groups: dict[str, list[int]] = {}
    for x in c.cases:
        g = groups.setdefault(x["group"], [0, 0])
        g[0] += 1
        g[1] += 0 if x["ok"] else 1
    doc = {"quick": args.quick, "seconds": round(time.time() - t0, 1), "cases": len(c.cases), "failures": len(fails),
           "by_group": {k: {"cases": v[0], "failures": v[1]} for k, v in groups.items()},
           "by_path": {p: sum(1 for x in c.cases if x["via"] == p) for p in sorted({x["via"] for x in c.cases})},
           "known_divergences": KNOWN_DIVERGENCES, "results": c.cases}
    if args.out != "-":
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    for k, v in doc["by_group"].items():
        print(f"{k:28} {v['cases']:4} cases  {v['failures']} failures")
    for x in fails:
        print(f"FAIL [{x['group']}] {x['case']}: got {x['got']}, want {x['want']}")
    print(f"{doc['cases']} cases ({', '.join(f'{n} {p}' for p, n in doc['by_path'].items())}), "
          f"{doc['failures']} failures, {len(KNOWN_DIVERGENCES)} known divergences reported, {doc['seconds']} s")
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
