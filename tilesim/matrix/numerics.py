"""The numerical model of a matrix instruction, written once for every row.

``D = A·B + C`` per block, with

* inputs first rounded to their operand type (the bits the registers can hold);
* products exact and the sum exact (rational arithmetic), then **one rounding** to the
  accumulator type, round-to-nearest-even, overflow to ±inf (integers wrap to 32 bits);
* NaN/±Inf propagate as IEEE does (an inf·0 or inf-inf gives NaN);
* ``neg``/``neg_hi`` (RDNA WMMA): bit 0 negates A, bit 1 B, bit 2 C; for packed 16-bit
  operands ``neg`` acts on the low halves and ``neg_hi`` on the high halves; for a 32-bit C
  ``neg_hi[2]`` takes the absolute value (RDNA3 ISA §7.9 "NEG and NEG_HI").

Hardware sums in a fixed internal order and may differ from this model by a few ulps; the
tolerance for comparing a device against the model lives here too (:func:`tolerance`).
``xf32``/``tf32`` operands ignore the low 13 mantissa bits (PTX ISA §9.7.14 for tf32; the
CDNA3 ISA describes xf32 as FP32 with a 10-bit mantissa — truncation is our assumption).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from tilesim.errors import ModifierError
from tilesim.matrix.dtypes import DType, decode, dtype, encode

__all__ = ["quantize", "round_exact", "dot_exact", "execute_logical", "tolerance", "FLOAT_FORMATS"]

# (mantissa bits incl. hidden, min normal exponent, max exponent, has infinity)
FLOAT_FORMATS: dict[str, tuple[int, int, int, bool]] = {
    "f64": (53, -1022, 1023, True),
    "f32": (24, -126, 127, True),
    "f16": (11, -14, 15, True),
    "bf16": (8, -126, 127, True),
}


def quantize(values: np.ndarray, dt: str | DType) -> np.ndarray:
    """Round values to ``dt`` (as the registers would hold them), returned as float64/int64."""
    d = dtype(dt)
    v = np.asarray(values)
    if d.name in ("xf32", "tf32"):
        bits = np.asarray(v, np.float64).astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
        return bits.view(np.float32).astype(np.float64)
    return decode(encode(v, d), d)


def round_exact(q: Fraction, dt: str) -> float:
    """Correctly round an exact rational to a binary float format (RNE), returned as float64."""
    p, emin, emax, has_inf = FLOAT_FORMATS[dt]
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, emin)
    quantum = Fraction(2) ** (e - p + 1)
    m = a / quantum
    n = m.numerator // m.denominator
    rem = m - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    val = n * quantum
    max_finite = (2 - Fraction(2) ** (1 - p)) * Fraction(2) ** emax
    if val > max_finite:
        return sign * (float("inf") if has_inf else float(max_finite))
    return sign * float(val)


def dot_exact(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: str) -> np.ndarray:
    """``a @ b + c`` for float64 inputs holding exact values, rounded once to ``out``.

    ``a``: (M, K), ``b``: (K, N), ``c``: (M, N). Non-finite cases follow IEEE float64.
    """
    M, K = a.shape
    N = b.shape[1]
    with np.errstate(all="ignore"):
        approx = a @ b + c
        prods = a[:, :, None] * b[None, :, :]
    res = np.empty((M, N), np.float64)
    finite_in = np.isfinite(prods).all(axis=1) & np.isfinite(c)
    fa = [[Fraction(float(x)) for x in row] for row in a] if finite_in.any() else None
    fb = [[Fraction(float(x)) for x in row] for row in b] if finite_in.any() else None
    for i in range(M):
        for j in range(N):
            if not finite_in[i, j]:
                res[i, j] = approx[i, j]
                continue
            s = Fraction(float(c[i, j]))
            for k in range(K):
                x, y = a[i, k], b[k, j]
                if x != 0 and y != 0:
                    s += fa[i][k] * fb[k][j]  # type: ignore[index]
            res[i, j] = round_exact(s, out)
    return res


def _as_blocks(x: np.ndarray, blocks: int, shape: tuple[int, int], name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.shape == shape and blocks == 1:
        return arr[None]
    if arr.shape == (blocks, *shape):
        return arr
    want = f"{shape}" if blocks == 1 else f"({blocks}, {shape[0]}, {shape[1]})"
    raise ModifierError(f"operand {name} has shape {arr.shape}; expected {want}")


def execute_logical(
    ins: object,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None = None,
    *,
    types: tuple[str, str, str, str] | None = None,
    neg: int = 0,
    neg_hi: int = 0,
    hi_mask: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> np.ndarray:
    """Run the instruction on logical matrices: A (blocks, M, K), B (blocks, K, N), C (blocks, M, N).

    Blocks may be omitted when the instruction has one. Returns D with values exactly as the
    D type holds them (float64 or int64 array), shaped like C.
    """
    from tilesim.matrix.instruction import MatrixInstruction

    assert isinstance(ins, MatrixInstruction)
    ta, tb, tc, td = (dtype(t) for t in (types or ins.types))
    nb, m, n, k = ins.blocks, ins.m, ins.n, ins.k
    squeeze = np.asarray(a).ndim == 2
    A = quantize(_as_blocks(a, nb, (m, k), "A"), ta)
    B = quantize(_as_blocks(b, nb, (k, n), "B"), tb)
    C = quantize(np.zeros((nb, m, n)) if c is None else _as_blocks(c, nb, (m, n), "C"), tc)
    for bit, (X, mask) in enumerate(((A, hi_mask[0]), (B, hi_mask[1]))):
        lo_on, hi_on = (neg >> bit) & 1, (neg_hi >> bit) & 1
        if lo_on or hi_on:
            sel = np.ones(X.shape, bool) if mask is None else (mask if hi_on else ~mask)
            if lo_on and hi_on:
                sel = np.ones(X.shape, bool)
            X[sel] = -X[sel]
    if (neg_hi >> 2) & 1:
        C = np.abs(C)
    if (neg >> 2) & 1:
        C = -C
    if td.kind in ("int", "uint"):
        D = np.einsum("bmk,bkn->bmn", A.astype(np.int64), B.astype(np.int64)) + C.astype(np.int64)
        D = decode(encode(D, td), td)
    else:
        D = np.stack([dot_exact(A[i], B[i], C[i], td.name) for i in range(nb)])
    return D[0] if squeeze and nb == 1 else D


def tolerance(ins: object, k_terms: int | None = None) -> tuple[float, float]:
    """(rtol, atol) for comparing a device's D against :func:`execute_logical`.

    Hardware accumulates in its own order with intermediate rounding to the accumulator
    precision; the bound is ``k`` roundings of the accumulator type.
    """
    from tilesim.matrix.instruction import MatrixInstruction

    assert isinstance(ins, MatrixInstruction)
    td = dtype(ins.types[3])
    if td.kind in ("int", "uint"):
        return 0.0, 0.0
    p = FLOAT_FORMATS.get(td.name, (24, 0, 0, True))[0]
    kk = k_terms or ins.k
    eps = 2.0 ** (1 - p)
    return kk * eps, kk * eps * 2.0 ** FLOAT_FORMATS.get(td.name, (24, -126, 0, True))[1]
