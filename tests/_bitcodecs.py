"""Bit-level decoders and encoders written from the format specifications (not tilesim code).

Every format is ``sign | exponent | mantissa`` with an exponent bias; they differ only in what the
top exponent and the ``1 000…0`` pattern mean. The rules, each from its specification:

* IEEE 754-2019 §3.4 (binary16 ``f16``; ``bf16`` is binary32's sign and exponent with a 7-bit
  mantissa): exponent 0 is subnormal ``(-1)^s · 2^(1-bias) · m/2^p``; exponent all ones is ±Inf
  (mantissa 0) or NaN; ``1 000…0`` is −0.
* OCP 8-bit Floating Point Specification (OFP8) rev 1.0, §4 (arXiv:2209.05433): **E4M3**, bias 7,
  no infinities, NaN only ``S.1111.111``, so ``S.1111.000``–``S.1111.110`` are normal (max 448);
  **E5M2**, bias 15, IEEE-like (±Inf at ``S.11111.00``, NaN ``S.11111.{01,10,11}``). Both have −0.
* FNUZ (arXiv:2206.02915; StableHLO RFC 20230321-fp8_fnuz; LLVM APFloat Float8E4M3FNUZ /
  Float8E5M2FNUZ): bias one higher than OCP (8 and 16), no infinities, no negative zero, and the
  single NaN is ``0x80`` (sign set, all else zero); every other pattern is a finite number.
* OCP Microscaling Formats (MX) v1.0, §5.3: **FP6 E2M3** (bias 1), **FP6 E3M2** (bias 3), **FP4
  E2M1** (bias 1): no Inf, no NaN, every pattern finite, −0 exists; **E8M0** (bias 127): no sign,
  no mantissa, value ``2^(e-127)``, ``0xFF`` is NaN, no zero.

Encoding (``encode``) is round to nearest, ties to even (IEEE 754-2019 §4.3.1), done by exact
comparison against the table of every finite value: the result is the nearer neighbour; at an exact
midpoint the one whose pattern's last bit is 0. Beyond the largest finite value the comparison is
with the value the next pattern up would have (IEEE §7.4: round as if the exponent were unbounded);
past it the result overflows — to ±Inf where the format has Inf, to NaN where it has none
(OFP8 §4, "non-saturating" conversion; FNUZ), and to ±max for FP6/FP4, which have neither
(MX v1.0 §5.3.2 leaves overflow to the implementation; tilesim and ml_dtypes saturate).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["FORMATS", "Format", "decode", "encode", "is_nan_pattern"]


@dataclass(frozen=True)
class Format:
    name: str
    ebits: int
    mbits: int
    bias: int
    signed: bool = True
    # what the top exponent means: "ieee" (Inf/NaN), "e4m3fn" (only S.1..1.1..1 NaN), "finite" (nothing special)
    top: str = "ieee"
    nan_at_neg_zero: bool = False  # FNUZ: 1 000…0 is the NaN, there is no -0
    nan_at_all_ones: bool = False  # E8M0: 0xFF is NaN
    has_zero: bool = True  # E8M0 has none

    @property
    def bits(self) -> int:
        return int(self.signed) + self.ebits + self.mbits

    @property
    def has_inf(self) -> bool:
        return self.top == "ieee"

    def decode_one(self, p: int) -> float:
        """Value of bit pattern ``p``, as float64 (exact: every format here has ≤ 11 significant bits)."""
        m = p & ((1 << self.mbits) - 1)
        e = (p >> self.mbits) & ((1 << self.ebits) - 1)
        s = (p >> (self.ebits + self.mbits)) & 1 if self.signed else 0
        sign = -1.0 if s else 1.0
        if self.nan_at_neg_zero and s == 1 and e == 0 and m == 0:
            return float("nan")
        if self.nan_at_all_ones and p == (1 << self.bits) - 1:
            return float("nan")
        top = e == (1 << self.ebits) - 1
        if top and self.top == "ieee":
            return sign * float("inf") if m == 0 else float("nan")
        if top and self.top == "e4m3fn" and m == (1 << self.mbits) - 1:
            return float("nan")
        if self.mbits == 0:  # E8M0: a bare power of two, no subnormals
            return sign * 2.0 ** (e - self.bias)
        if e == 0:
            return sign * 2.0 ** (1 - self.bias) * (m / 2.0 ** self.mbits)
        return sign * 2.0 ** (e - self.bias) * (1.0 + m / 2.0 ** self.mbits)

    @cached_property
    def table(self) -> np.ndarray:
        """Value of every pattern ``0 … 2**bits - 1`` (float64)."""
        return np.array([self.decode_one(p) for p in range(1 << self.bits)], np.float64)

    @cached_property
    def _finite_nonneg(self) -> tuple[np.ndarray, np.ndarray, float, int]:
        """(sorted non-negative finite values, their patterns, the value one pattern above max, max's pattern)."""
        t = self.table
        sign_bit = 1 << (self.bits - 1) if self.signed else 1 << self.bits
        pats = np.arange(t.size)
        ok = np.isfinite(t) & (pats < sign_bit) & (t >= 0)
        vals, ps = t[ok], pats[ok]
        order = np.argsort(vals, kind="stable")
        vals, ps = vals[order], ps[order]
        mx, pmx = float(vals[-1]), int(ps[-1])
        # the value the next pattern would have with an unbounded exponent: max + one ulp of max's binade
        ulp = mx - float(vals[-2])
        return vals, ps, mx + ulp, pmx


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("f16", 5, 10, 15),
    Format("bf16", 8, 7, 127),
    Format("fp8_ocp", 4, 3, 7, top="e4m3fn"),
    Format("bf8_ocp", 5, 2, 15),
    Format("fp8_fnuz", 4, 3, 8, top="finite", nan_at_neg_zero=True),
    Format("bf8_fnuz", 5, 2, 16, top="finite", nan_at_neg_zero=True),
    Format("fp6", 2, 3, 1, top="finite"),
    Format("bf6", 3, 2, 3, top="finite"),
    Format("fp4", 2, 1, 1, top="finite"),
    Format("e8m0", 8, 0, 127, signed=False, top="finite", nan_at_all_ones=True, has_zero=False),
)}


def decode(patterns: np.ndarray, name: str) -> np.ndarray:
    """float64 values of bit patterns (integers) of format ``name``."""
    f = FORMATS[name]
    p = np.asarray(patterns, np.int64)
    if ((p < 0) | (p >= (1 << f.bits))).any():
        raise ValueError(f"{name} patterns are {f.bits}-bit")
    return f.table[p]


def is_nan_pattern(patterns: np.ndarray, name: str) -> np.ndarray:
    return np.isnan(decode(patterns, name))


def _nan_pattern(f: Format, negative: np.ndarray) -> np.ndarray:
    """A NaN encoding (the one with the lowest magnitude bits for the sign given where it matters)."""
    t = f.table
    nans = np.flatnonzero(np.isnan(t))
    sign_bit = 1 << (f.bits - 1)
    pos = [int(p) for p in nans if not p & sign_bit] or [int(nans[0])]
    neg = [int(p) for p in nans if p & sign_bit] or pos
    return np.where(negative, neg[-1], pos[-1])


def encode(values: np.ndarray, name: str) -> np.ndarray:
    """Bit patterns (int64) of float64 ``values`` rounded to nearest, ties to even, non-saturating
    (see the module docstring). NaN inputs give a NaN pattern; FP6/FP4 saturate."""
    f = FORMATS[name]
    if not f.signed or not f.has_zero:
        raise ValueError(f"encode is written for signed formats with a zero, not {name}")
    x = np.asarray(values, np.float64)
    vals, pats, virt, pmx = f._finite_nonneg
    mag = np.abs(x)
    neg = np.signbit(x)
    with np.errstate(invalid="ignore"):
        i = np.clip(np.searchsorted(vals, mag, side="right") - 1, 0, vals.size - 1)
        lo, plo = vals[i], pats[i]
        top = i == vals.size - 1
        hi = np.where(top, virt, vals[np.minimum(i + 1, vals.size - 1)])
        phi = np.where(top, pmx + 1, pats[np.minimum(i + 1, vals.size - 1)])
        mid = (lo + hi) / 2  # exact: both have few significant bits
        up = (mag > mid) | ((mag == mid) & (phi % 2 == 0))
        mp = np.where(up, phi, plo)
        over = top & up  # rounded past max
    saturating = f.top == "finite" and not f.nan_at_neg_zero  # FP6/FP4: no Inf, no NaN
    if saturating:
        mp = np.where(over | np.isinf(x), pmx, mp)
        over = np.zeros_like(over)
    sign_bit = 1 << (f.bits - 1)
    out = np.where(neg, mp | sign_bit, mp)
    if f.nan_at_neg_zero:  # FNUZ: no -0; a negative value that rounds to zero is +0
        out = np.where(mp == 0, 0, out)
    if f.has_inf:
        inf_pat = ((1 << f.ebits) - 1) << f.mbits
        out = np.where(over, np.where(neg, inf_pat | sign_bit, inf_pat), out)
        out = np.where(np.isinf(x), np.where(neg, inf_pat | sign_bit, inf_pat), out)
    elif not saturating:
        out = np.where(over | np.isinf(x), _nan_pattern(f, neg), out)
    # NaN has no encoding in FP6/FP4 (MX v1.0 §5.3.2: implementation-defined): -1, "no pattern"
    out = np.where(np.isnan(x), _nan_pattern(f, neg) if not saturating else -1, out)
    return out.astype(np.int64)
