"""The numerical model of a matrix instruction, written once for every row.

``D = A·B + C`` per block, with

* inputs first rounded to their operand type (the bits the registers can hold);
* products exact and the sum exact (rational arithmetic), then **one rounding** to the
  accumulator type, round-to-nearest-even, overflow to ±inf (integers wrap to 32 bits);
* NaN/±Inf propagate as IEEE does (an inf·0 or inf-inf gives NaN);
* ``neg``/``neg_hi`` (RDNA WMMA): bit 0 negates A, bit 1 B, bit 2 C; for packed 16-bit
  operands ``neg`` acts on the low halves and ``neg_hi`` on the high halves; for a 32-bit C
  ``neg_hi[2]`` takes the absolute value (RDNA3 ISA §7.9 "NEG and NEG_HI"; LLVM sets both
  NEG and NEG_HI to negate a whole packed operand, AMDGPUISelDAGToDAG ``SelectWMMAModsF16Neg``);
* on ``iu8``/``iu4`` WMMA the NEG field is signedness instead: bit 0 A signed, bit 1 B signed;
* gfx950 ``f8f6f4``: CBSZ/BLGP pick the A/B element formats (:func:`format_types`); the scale
  forms (:func:`execute_scaled`) multiply each ``block``-k slice of a row of A and of a column of B
  by its decoded block scale (E8M0 ``2**(e-127)``, 0xFF NaN) *before* the exact dot product: the
  scaled products ``(a·sa)(b·sb)`` are exact, the sum exact, one rounding to f32 (OCP MX v1.0 §6.3
  defines the MX dot product as ``X_A·X_B·Σ a_i·b_i`` and leaves the internal precision to the
  implementation; the CDNA4 ISA does not state the accumulation order — so this is the model,
  with :func:`tolerance` for the device).

Hardware sums in a fixed internal order and may differ from this model by a few ulps; the
tolerance for comparing a device against the model lives here too (:func:`tolerance`).
``xf32``/``tf32`` operands ignore the low 13 mantissa bits (PTX ISA §9.7.14 for tf32; the
CDNA3 ISA describes xf32 as FP32 with a 10-bit mantissa — truncation is our assumption).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from tilesim.errors import InstructionError, ModifierError, choices
from tilesim.matrix.dtypes import DType, decode, dtype, encode
from tilesim.matrix.geometry import FormatGeometry
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.scale import decode_scale


__all__ = ["quantize", "cast", "round_exact", "dot_exact", "execute_logical", "tolerance", "FLOAT_FORMATS", "check_neg",
           "signed_types", "apply_negation", "format_types", "execute_scaled", "scale_factors"]

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
    if d.truncated_f32:
        bits = np.asarray(v, np.float64).astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
        return bits.view(np.float32).astype(np.float64)
    if d.kind == "float" and d.np_name in ("float16", "float32", "float64") and d.bits == d.reg_bits:
        # numpy's own float types: encode is this cast and decode the cast back (the bit views and
        # integer widenings between them change no bit); without the uint64 temporaries
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(v, np.float64).astype(d.np).astype(np.float64)
    return decode(encode(v, d), d)


def cast(values: np.ndarray, src: str | DType, dst: str | DType) -> np.ndarray:
    """``src`` values as a ``cast`` to ``dst`` leaves them (float64/int64), one rule for every pair:

    * float to integer: rounded toward zero and saturated to the integer type's range, NaN to 0
      (PTX ``cvt.rzi.sat``; ``v_cvt_i32_f32`` for i32), so a quantisation clamps as frameworks do;
    * integer to integer: the low bits kept (two's complement wrap, as C converts);
    * to a float type: rounded to nearest even once (:func:`quantize`), as every other path rounds.

    The code generator emits the same rule (``tilesim/codegen/elements.py``)."""
    s, d = dtype(src), dtype(dst)
    v = np.asarray(values)
    if d.kind in ("int", "uint") and s.kind == "float":
        lo, hi = (0, (1 << d.bits) - 1) if d.kind == "uint" else (-(1 << (d.bits - 1)), (1 << (d.bits - 1)) - 1)
        with np.errstate(invalid="ignore"):
            f = np.trunc(np.asarray(v, np.float64))
            return np.where(np.isnan(f), 0, np.clip(np.nan_to_num(f, posinf=hi, neginf=lo), lo, hi)).astype(np.int64)
    if d.kind in ("int", "uint"):
        return quantize(np.asarray(v).astype(np.int64), d)
    return quantize(v, d)


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


def _dyadic(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Finite float64 values as exact integers on one scale: ``x == n * 2**e`` elementwise.

    Returns an object array of Python ints ``n`` (non-finite entries read as 0) and ``e``.
    """
    fin = np.isfinite(x)
    frac, ex = np.frexp(np.where(fin, x, 0.0))
    mant = (frac * 2.0**53).astype(np.int64)  # exact: a float64 significand has 53 bits
    ex = ex.astype(np.int64) - 53
    nz = mant != 0
    e0 = int(ex[nz].min()) if nz.any() else 0
    shift = np.where(nz, ex - e0, 0)
    ints = np.empty(x.shape, object)
    ints.reshape(-1)[:] = [int(mv) << int(sh) for mv, sh in zip(mant.reshape(-1), shift.reshape(-1))]
    return ints, e0


def dot_exact(a: np.ndarray, b: np.ndarray, c: np.ndarray, out: str) -> np.ndarray:
    """``a @ b + c`` for float64 inputs holding exact values, rounded once to ``out``.

    ``a``: (M, K), ``b``: (K, N), ``c``: (M, N). The sum is exact: every finite float is an
    integer times a power of two, so the products and the sum are Python integers on one scale.
    Non-finite cases follow IEEE.
    """
    with np.errstate(all="ignore"):
        # Where an input is NaN/inf the result is NaN/inf whatever the finite terms add, so only
        # the non-finite terms are summed (IEEE); a finite product that overflows float64 must
        # not turn inf into NaN.
        special = ~np.isfinite(a)[:, :, None] | ~np.isfinite(b)[None, :, :]
        prods = np.where(special, a[:, :, None] * b[None, :, :], 0.0)
        approx = prods.sum(axis=1) + np.where(np.isfinite(c), 0.0, c)
    # Exact path whenever every input of the dot product is finite. (Testing the float64
    # products instead would send f64 products that overflow float64 but cancel exactly,
    # e.g. 1e200*1e200 - 1e200*1e200, down the IEEE path and give NaN instead of 0.)
    finite_in = np.isfinite(a).all(axis=1)[:, None] & np.isfinite(b).all(axis=0)[None, :] & np.isfinite(c)
    res = np.array(approx, np.float64)
    if not finite_in.any():
        return res
    ia, ea = _dyadic(a)  # non-finite entries read as 0; their outputs take the IEEE path above
    ib, eb = _dyadic(b)
    ic, ec = _dyadic(c)
    e = min(ea + eb, ec)
    total = (ia @ ib) * (1 << (ea + eb - e)) + ic * (1 << (ec - e))  # exact sum * 2**-e
    scale = Fraction(2) ** e
    for i, j in zip(*np.nonzero(finite_in)):
        res[i, j] = round_exact(total[i, j] * scale, out)
    return res


def _as_blocks(x: np.ndarray, blocks: int, shape: tuple[int, int], name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.shape == shape and blocks == 1:
        return arr[None]
    if arr.shape == (blocks, *shape):
        return arr
    want = f"{shape}" if blocks == 1 else f"({blocks}, {shape[0]}, {shape[1]})"
    raise ModifierError(f"operand {name} has shape {arr.shape}; expected {want}")


def check_neg(ins: MatrixInstruction, neg: int, neg_hi: int) -> None:
    """``neg``/``neg_hi`` must be raw values the row's modifiers accept (0 where it has none)."""
    for name, value in (("neg", neg), ("neg_hi", neg_hi)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
            raise ModifierError(f"{name} must be an integer, got {value!r}")
        mod = ins.modifier(name)
        blgp = ins.modifier("blgp")
        if mod is None and name == "neg" and blgp is not None and blgp.kind == "negate":
            mod = blgp  # CDNA3/CDNA4 f64 MFMA: the BLGP field is the NEG field (assembler: neg:[a,b,c])
        if mod is None:
            if value:
                have = [m.name for m in ins.modifiers] or ["none"]
                raise ModifierError(f"{name}={value}: {ins.mnemonic} ({ins.family}) has no {name.upper()} modifier; "
                                    f"its modifiers: {choices(have)}")
        elif value not in mod.values:
            raise ModifierError(f"{name}={value} is not legal for {ins.mnemonic} ({ins.family}); "
                                f"legal: {choices(mod.values)}")


def _signed(d: DType) -> DType:
    return dtype("i" + d.name[1:]) if d.kind == "uint" else d


def _hi_halves(ins: MatrixInstruction, op: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """Which logical elements of a packed 16-bit operand sit in bits 16-31 of their VGPR.

    Read from the row's hardware layout (default wave; every copy and every wave form of the
    catalog's 16-bit rows agree, which tests/test_numerics.py checks). ``None`` when the slots
    are not single 16-bit elements (32-bit operands, or SWMMAC's packed pairs of sparse A).
    """
    lay = ins.layout(op)
    if lay.elem_bits != 16 or dtype(ins.types["AB".index(op)]).reg_bits != 16:
        return None
    loc = lay.location_array()
    mask = np.zeros(shape, bool)
    mask[loc[:, 0], loc[:, 1], loc[:, 2]] = loc[:, 5] >= 16
    return mask


def signed_types(ins: MatrixInstruction, neg: int, types: tuple[str, str, str, str] | None = None
                 ) -> tuple[tuple[DType, DType, DType, DType], int]:
    """Operand types after the NEG field's signedness meaning (RDNA iu8/iu4), and the NEG bits
    left to act as negation (0 on those rows)."""
    ta, tb, tc, td = (dtype(t) for t in (types or ins.types))
    neg_mod = ins.modifier("neg")
    if neg_mod is not None and neg_mod.kind == "signedness":
        return ((_signed(ta) if neg & 1 else ta), (_signed(tb) if neg & 2 else tb), tc, td), 0
    return (ta, tb, tc, td), neg


def apply_negation(ins: MatrixInstruction, A: np.ndarray, B: np.ndarray, C: np.ndarray, neg: int, neg_hi: int,
                   hi_mask: tuple[np.ndarray | None, np.ndarray | None] = (None, None)
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NEG/NEG_HI on operand values ``(..., rows, cols)``: on packed 16-bit A/B ``neg`` negates the
    elements in the low halves of their VGPRs and ``neg_hi`` the high halves; bit 2 negates C
    (``neg_hi`` bit 2: ``|C|``). Returns new arrays."""
    A, B, C = np.array(A, np.float64), np.array(B, np.float64), np.array(C, np.float64)
    for bit, (op, X, mask) in enumerate((("A", A, hi_mask[0]), ("B", B, hi_mask[1]))):
        lo_on, hi_on = (neg >> bit) & 1, (neg_hi >> bit) & 1
        if not (lo_on or hi_on):
            continue
        if lo_on and hi_on:
            sel = np.ones(X.shape, bool)
        else:
            hi = _hi_halves(ins, op, (ins.blocks, *X.shape[-2:])) if mask is None else np.asarray(mask, bool)
            if hi is None and (ins.sparse and op == "A"):
                raise ModifierError(f"{'neg' if lo_on else 'neg_hi'} alone on {ins.mnemonic}'s sparse A acts on the "
                                    "low/high element of each packed pair, which depends on the sparsity "
                                    "indices; pass hi_mask, or set neg and neg_hi together")
            # 32-bit A/B have no halves: either bit negates the element (not confirmed by an ISA table).
            sel = np.ones(X.shape, bool) if hi is None else np.broadcast_to(hi if hi_on else ~hi, X.shape)
        X[sel] = -X[sel]
    if (neg_hi >> 2) & 1:
        C = np.abs(C)
    if (neg >> 2) & 1:
        C = -C
    return A, B, C


def execute_logical(
    ins: MatrixInstruction,
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

    ``neg``/``neg_hi`` are the raw modifier fields and must be legal for the row. On rows whose
    NEG field means signedness (RDNA ``iu8``/``iu4``), bit 0 reads A and bit 1 reads B as signed
    (unsigned otherwise); nothing is negated. On packed 16-bit A/B, ``neg`` negates the elements
    in the low halves of their VGPRs and ``neg_hi`` those in the high halves — so a whole-operand
    negation is ``neg`` and ``neg_hi`` together, as LLVM emits it. ``hi_mask`` overrides which
    logical elements count as high halves; by default it is read from the row's layout.
    """
    if not isinstance(ins, MatrixInstruction):
        raise InstructionError(f"execute_logical needs a catalog row (tilesim.matrix.lookup), got {ins!r}")
    check_neg(ins, neg, neg_hi)
    (ta, tb, tc, td), neg = signed_types(ins, neg, types)
    nb, m, n, k = ins.blocks, ins.m, ins.n, ins.k
    squeeze = np.asarray(a).ndim == 2
    A = quantize(_as_blocks(a, nb, (m, k), "A"), ta)
    B = quantize(_as_blocks(b, nb, (k, n), "B"), tb)
    C = quantize(np.zeros((nb, m, n)) if c is None else _as_blocks(c, nb, (m, n), "C"), tc)
    A, B, C = apply_negation(ins, A, B, C, neg, neg_hi, hi_mask)
    if td.kind in ("int", "uint"):
        D = np.einsum("bmk,bkn->bmn", A.astype(np.int64), B.astype(np.int64)) + C.astype(np.int64)
        D = decode(encode(D, td), td)
    else:
        D = np.stack([dot_exact(A[i], B[i], C[i], td.name) for i in range(nb)])
    return D[0] if squeeze and nb == 1 else D


def format_types(ins: MatrixInstruction, cbsz: int = 0, blgp: int = 0) -> tuple[str, str, str, str]:
    """The operand types under the format modifiers: gfx950 f8f6f4 reads A in the format CBSZ names and B
    in the one BLGP names (0 fp8, 1 bf8, 2 fp6, 3 bf6, 4 fp4); other rows keep their types."""
    out = list(ins.types)
    for i, (op, code) in enumerate((("A", cbsz), ("B", blgp))):
        recipe = ins.recipe(op) if op in ins.operands else None
        if isinstance(recipe, FormatGeometry):
            legal = [f[0] for f in recipe.formats]
            if code not in legal:
                raise ModifierError(f"{recipe.modifier}={code} is not a format of {ins.mnemonic}; "
                                    f"legal: {choices(legal)}")
            out[i] = recipe.dtype(code)
    return out[0], out[1], out[2], out[3]


def scale_factors(ins: MatrixInstruction, operand: str, bits: np.ndarray, fmt_code: int = 0) -> np.ndarray:
    """Block-scale bit patterns of ``SA`` (M, K/block) or ``SB`` (K/block, N) -> per-element factors
    of A (M, K) or B (K, N): each scale repeated over its ``block`` k. ``fmt_code``: the scale-format
    field (gfx1250 ``matrix_*_scale_fmt``: 0 E8M0, 1 E5M3, 2 E4M3; rows without one take 0 only)."""
    geo = ins.scale(operand).in_format(fmt_code)
    nkb = geo.blocks_of(ins.k)
    want = (ins.m, nkb) if operand == "SA" else (nkb, ins.n)
    arr = np.asarray(bits)
    if arr.shape != want:
        raise ModifierError(f"{operand} of {ins.mnemonic} has shape {arr.shape}; expected {want} "
                            f"(one {geo.fmt} scale per {geo.block} k)")
    if arr.dtype.kind not in "iu":
        raise ModifierError(f"{operand} holds {geo.fmt} bit patterns (integers 0..255), got {arr.dtype}")
    return np.repeat(decode_scale(arr, geo.fmt), geo.block, axis=1 if operand == "SA" else 0)


def execute_scaled(
    ins: MatrixInstruction,
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    scale_a: np.ndarray,
    scale_b: np.ndarray,
    *,
    cbsz: int = 0,
    blgp: int = 0,
    a_scale_fmt: int = 0,
    b_scale_fmt: int = 0,
) -> np.ndarray:
    """A scaled row on logical matrices: ``D = (A ∘ SA)·(B ∘ SB) + C`` with A (M, K) in the CBSZ
    format, B (K, N) in the BLGP format, ``scale_a`` (M, K/block) and ``scale_b`` (K/block, N) as
    scale *bit patterns* (bytes of the format ``a_scale_fmt``/``b_scale_fmt`` selects: E8M0 unless a
    gfx1250 row's field says E5M3 (1) or E4M3 (2)). Exact scaled products and sum, one rounding to
    D's type."""
    if not isinstance(ins, MatrixInstruction) or not ins.scale_operands:
        raise InstructionError(f"execute_scaled needs a scaled catalog row (v_mfma_scale_*), got {ins!r}"[:200])
    ta, tb, tc, td = format_types(ins, cbsz, blgp)
    A = quantize(_as_blocks(a, 1, (ins.m, ins.k), "A")[0], ta)
    B = quantize(_as_blocks(b, 1, (ins.k, ins.n), "B")[0], tb)
    C = quantize(np.zeros((ins.m, ins.n)) if c is None else _as_blocks(c, 1, (ins.m, ins.n), "C")[0], tc)
    with np.errstate(invalid="ignore"):  # a NaN scale (0xFF) makes its block NaN, as the format says
        A = A * scale_factors(ins, "SA", scale_a, a_scale_fmt)  # exact: two <=4-bit significands
        B = B * scale_factors(ins, "SB", scale_b, b_scale_fmt)
    return dot_exact(A, B, C, td)


def tolerance(ins: MatrixInstruction, k_terms: int | None = None) -> tuple[float, float]:
    """(rtol, atol) for comparing a device's D against :func:`execute_logical`.

    Hardware accumulates in its own order with intermediate rounding to the accumulator
    precision; the bound is ``k`` roundings of the accumulator type.
    """
    if not isinstance(ins, MatrixInstruction):
        raise InstructionError(f"tolerance needs a catalog row (tilesim.matrix.lookup), got {ins!r}")
    td = dtype(ins.types[3])
    if td.kind in ("int", "uint"):
        return 0.0, 0.0
    p = FLOAT_FORMATS.get(td.name, (24, 0, 0, True))[0]
    kk = k_terms or ins.k
    eps = 2.0 ** (1 - p)
    return kk * eps, kk * eps * 2.0 ** FLOAT_FORMATS.get(td.name, (24, -126, 0, True))[1]
