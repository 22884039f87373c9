"""Matrix instructions (WMMA, MFMA, SWMMAC, SMFMAC; gfx950 f8f6f4 and its block-scaled form) through the catalog.

Nothing about an operand's placement is written here: the row from
:func:`tilesim.matrix.lookup` gives, per operand, the hardware layout (``ins.layout(op,
wave_size=…, cbsz/abid/blgp/opsel)``) whose location records — (block, row, col, vgpr, lane,
bit_lo, bit_hi) — gather each operand matrix out of the registers of every selected wave and
scatter D back. Replicated elements (RDNA3 A/B in lanes 16-31) are read from their lowest lane, as
the tile simulator reads them; copies that disagree are recorded in the emulation notes (a failed
run: `emulate` exits 1, the verdict is EMULATED_MISMATCH).

gfx950 ``v_mfma_[scale_]f32_*_f8f6f4``: CBSZ/BLGP pick A's and B's formats (and so their layouts and
tuple sizes, 8/6/4 VGPRs); the scale form's fifth and sixth operands are the SA/SB scale VGPRs, whose
byte ``op_sel[i] + 2*op_sel_hi[i]`` is read through the row's SA/SB layouts, E8M0-decoded, and
multiplied into each 32-k block of A and B before the exact dot product (``numerics.execute_scaled``'s
model). Scale operands that are not VGPRs are refused (LLVM only emits VGPRs: the hardware reads
bits [30:23] of an inline constant or SGPR).

Numerics are the catalog's (:mod:`tilesim.matrix.numerics`): NEG/NEG_HI and the RDNA iu8
signedness bits through ``check_neg``/``signed_types``/``apply_negation``, integer products exact in
int64 wrapped to the D type, float products summed exactly and rounded once to the D type. The
exact sum is computed fast in float64 with an error bound; only where the bound straddles a
rounding boundary (or an input is not finite) is :func:`~tilesim.matrix.numerics.dot_exact` run.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

import numpy as np

from tilesim.errors import TilesimError
from tilesim.isa.asm import Imm, Instr, Reg
from tilesim.isa.state import Ctx, Machine, imm_bits
from tilesim.matrix import lookup
from tilesim.matrix.catalog import rows
from tilesim.matrix.dtypes import decode, encode
from tilesim.matrix.geometry import FormatGeometry
from tilesim.matrix.instruction import MatrixInstruction
from tilesim.matrix.numerics import apply_negation, check_neg, dot_exact, format_types, quantize, signed_types
from tilesim.matrix.registers import unpack
from tilesim.matrix.scale import decode_scale
from tilesim.targets import get_target

__all__ = ["compile_matrix", "AMD_KINDS", "MATRIX_PREFIXES", "exact_dot_batched"]

# The kinds of the catalog's rows on AMD targets and the mnemonic prefix each is spelled with in
# clang's assembly (``v_mfma_``, ``v_wmma_``, ...), read off the catalog: a kind added there is
# dispatched here with no second list (tests/test_one_source.py checks every AMD spelling has its prefix).
AMD_KINDS = frozenset(r.kind for r in rows() if any(get_target(t).vendor == "amd" for t in r.targets))
MATRIX_PREFIXES = tuple(sorted(f"v_{k}_" for k in AMD_KINDS))
_U32, _U64 = np.uint32, np.uint64


@functools.lru_cache(maxsize=256)
def _plan(row: MatrixInstruction, op: str, wave: int, cbsz: int, abid: int, blgp: int, opsel: int,
          opsel_a: int = 0, opsel_b: int = 0) -> tuple:
    """Gather/scatter plan of one operand: record arrays, the primary (lowest-lane) record of each
    logical element, and the records split into groups that touch distinct registers."""
    lay = row.layout(op, wave_size=wave, cbsz=cbsz, abid=abid, blgp=blgp, opsel=opsel, opsel_a=opsel_a,
                     opsel_b=opsel_b)
    rec = lay.location_array()
    dims = dict(lay.out_dims)
    blocks, rows, cols = dims.get("block", 1), dims["row"], dims["col"]
    flat = (rec[:, 0] * rows + rec[:, 1]) * cols + rec[:, 2]
    order = np.lexsort((rec[:, 4], flat))
    first = np.ones(order.size, bool)
    first[1:] = flat[order][1:] != flat[order][:-1]
    primary = np.full(blocks * rows * cols, -1, np.int64)
    primary[flat[order][first]] = order[first]
    fi = rec[:, 4] * 4096 + rec[:, 3]
    groups, left = [], np.arange(rec.shape[0])
    while left.size:
        _, idx = np.unique(fi[left], return_index=True)
        groups.append(left[idx])
        left = np.delete(left, idx)
    return rec, flat, primary, (blocks, rows, cols), tuple(groups)


def _fields(regs: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """``regs``: uint32[waves, lanes, nregs+1] → uint64[waves, records] bit fields."""
    lo, hi = rec[:, 5].astype(_U64), rec[:, 6]
    width = int(hi[0] - rec[0, 5] + 1)
    word = regs[:, rec[:, 4], rec[:, 3]].astype(_U64) | (regs[:, rec[:, 4], rec[:, 3] + 1].astype(_U64) << _U64(32))
    if width == 64:
        return word
    return (word >> lo) & _U64((1 << width) - 1)


def _quantum_exp(x: np.ndarray) -> np.ndarray:
    """Exponent of the lowest set bit of each finite float64 (a large number for 0)."""
    m, e = np.frexp(x)
    M = np.abs(m * 2.0**53).astype(np.int64)
    tz = np.frexp((M & -M).astype(np.float64))[1] - 1
    return np.where(x != 0, e - 53 + tz, 1 << 20)


def _sig_bits(x: np.ndarray) -> np.ndarray:
    """Significant bits of each finite float64 (from the top bit to the lowest set bit)."""
    m, e = np.frexp(x)
    q = _quantum_exp(x)
    return np.where(x != 0, e - q, 0)


def exact_dot_batched(A: np.ndarray, B: np.ndarray, C: np.ndarray, out: str) -> np.ndarray:
    """``A @ B + C`` over leading batch dims, the exact sum rounded once to ``out``.

    The float64 sum is exact (in any order) when every product is exact in float64 (the operands'
    significands fit 53 bits together) and all terms are multiples of 2**q — q bounded below by the
    lowest set bit of A's row plus B's column, and of C — with magnitudes summing below 2**(q+53).
    Otherwise an error bound decides whether rounding float64's sum gives the correctly rounded
    result. Elements neither test settles (NaN/inf, f64 operands near a tie) go to ``dot_exact``."""
    with np.errstate(all="ignore"):
        approx = np.matmul(A, B) + C
        mag = np.matmul(np.abs(A), np.abs(B)) + np.abs(C)
        prod_exact = int(_sig_bits(A).max(initial=0)) + int(_sig_bits(B).max(initial=0)) <= 53
        qa, qb, qc = _quantum_exp(A).min(axis=-1), _quantum_exp(B).min(axis=-2), _quantum_exp(C)
        q = np.minimum(qa[..., :, None] + qb[..., None, :], qc)
        exact = prod_exact & np.isfinite(mag) & (mag < np.ldexp(1.0, np.clip(q + 53, -1074, 1023)))
        if exact.all():
            return quantize(approx, out)
        bound = (A.shape[-1] + 4) * 2.0**-52 * mag + 2.0**-1074 * (A.shape[-1] + 4)
        lo, hi = quantize(approx - bound, out), quantize(approx + bound, out)
        D = np.where(exact, quantize(approx, out), lo)
    unsure = ~(exact | ((lo == hi) & np.isfinite(lo) & np.isfinite(mag)))
    if unsure.any():
        lead = np.argwhere(unsure.reshape(-1, *unsure.shape[-2:]).any(axis=(1, 2)))[:, 0]
        Af, Bf, Cf, Df = (x.reshape(-1, *x.shape[-2:]) for x in (A, B, C, D))
        for t in lead:
            Df[t] = dot_exact(Af[t], Bf[t], Cf[t], out)
        D = Df.reshape(D.shape)
    return D


def _mods(ins: Instr, row: MatrixInstruction, ctx: Ctx) -> dict[str, int]:
    out: dict[str, int] = {}
    for k, v in ins.mods:
        if k in ("neg_lo", "neg_hi", "neg"):
            m = re.fullmatch(r"\[([01])(?:,([01]))?(?:,([01]))?\]", v)
            if not m:
                raise ctx.err(ins, f"{k}:{v} not understood")
            bits = sum(int(b) << i for i, b in enumerate(m.groups()) if b is not None)
            out["neg_hi" if k == "neg_hi" else "neg"] = bits
        elif k in ("cbsz", "abid", "blgp"):
            out[k] = int(v, 0)
        elif k == "index_key" and row.modifier("opsel") is not None and row.modifier("opsel").kind == "index_set":
            out["opsel"] = int(v, 0)  # SWMMAC: which index set of the index VGPR
        elif k in ("op_sel", "op_sel_hi") and row.scale_operands:
            # scale byte selects: op_sel[i] is bit 0, op_sel_hi[i] bit 1 of scale_src_i's byte (clang's
            # encoding of the builtin's opsel_a/opsel_b, tests/test_scaled_mfma.py)
            m = re.fullmatch(r"\[([01]),([01])(?:,([01]))?\]", v)
            if not m or m.group(3) == "1":
                raise ctx.err(ins, f"{k}:{v} not understood (scale byte selects are {k}:[a,b,0])")
            shift = 1 if k == "op_sel_hi" else 0
            out["opsel_a"] = out.get("opsel_a", 0) | int(m.group(1)) << shift
            out["opsel_b"] = out.get("opsel_b", 0) | int(m.group(2)) << shift
        elif k == "op_sel" and re.fullmatch(r"\[0(,0)*\]", v):
            continue
        else:
            raise ctx.err(ins, f"modifier {k}:{v} is not modelled for {row.mnemonic}")
    for k in ("cbsz", "abid", "blgp"):
        if out.get(k) and row.modifier(k) is None:
            raise ctx.err(ins, f"{row.mnemonic} has no {k.upper()} modifier")
    return out


def _apply_scales(row: MatrixInstruction, A: np.ndarray, B: np.ndarray, bits: dict[str, np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Multiply each block of k of A (w, 1, M, K) and B (w, 1, K, N) by its decoded scale (exact)."""
    fa = np.repeat(decode_scale(bits["SA"], row.scale("SA").fmt), row.scale("SA").block, axis=-1)
    fb = np.repeat(decode_scale(bits["SB"], row.scale("SB").fmt), row.scale("SB").block, axis=-2)
    with np.errstate(invalid="ignore"):
        return A * fa[:, None], B * fb[:, None]


def compile_matrix(ins: Instr, ctx: Ctx, st: Machine) -> Callable[[np.ndarray], None]:
    try:
        row = lookup(ins.mnemonic, ctx.target)
    except TilesimError as e:
        raise ctx.err(ins, f"not in the catalog for {ctx.target}: {e}") from None
    if row.kind not in AMD_KINDS:
        raise ctx.err(ins, f"{row.kind} instructions are not modelled")
    mods = _mods(ins, row, ctx)
    neg, neg_hi = mods.pop("neg", 0), mods.pop("neg_hi", 0)
    scaled = row.scale_operands  # ("SA", "SB") on gfx950 v_mfma_scale_*
    try:
        check_neg(row, neg, neg_hi)
        lay_mods = dict(cbsz=mods.get("cbsz", 0), abid=mods.get("abid", 0), blgp=mods.get("blgp", 0),
                        opsel=mods.get("opsel", 0))
        plain = dict(cbsz=0, abid=0, blgp=0, opsel=0)
        if row.sparse:  # A and its index VGPR are read through the catalog's sparse unpacking; C is D
            row.layout("K", wave_size=ctx.wave, **lay_mods)  # the modifiers are legal for the index set
            plans = {op: _plan(row, op, ctx.wave, **plain) for op in "ABD"}
            plans["C"] = plans["D"]
        else:
            plans = {op: _plan(row, op, ctx.wave, **(lay_mods if op != "D" else plain)) for op in "ABCD"}
        for op in scaled:
            sel = {"opsel_a": mods.get("opsel_a", 0), "opsel_b": mods.get("opsel_b", 0)}
            plans[op] = _plan(row, op, ctx.wave, **plain, **sel)
        types = format_types(row, lay_mods["cbsz"], lay_mods["blgp"])  # f8f6f4: the formats CBSZ/BLGP name
    except TilesimError as e:
        raise ctx.err(ins, str(e)) from None
    nregs = dict(row.registers_for(ctx.wave))
    for op, code in (("A", lay_mods["cbsz"]), ("B", lay_mods["blgp"])):
        recipe = row.recipe(op, ctx.wave)
        if isinstance(recipe, FormatGeometry):  # the tuple is 8/6/4 VGPRs as the format says (CDNA4 ISA §7.1.5)
            nregs[op] = recipe.vgprs(code)
    order = ["D", "A", "B", "K" if row.sparse else "C", *scaled]
    if len(ins.operands) != len(order):
        raise ctx.err(ins, f"expected {', '.join(order)} operands, got {len(ins.operands)}")
    regs: dict[str, object] = {}
    for op, x in zip(order[4:], ins.operands[4:]):
        if not (isinstance(x, Reg) and x.file == "v" and x.count == 1 and not (x.neg or x.abs or x.half)):
            raise ctx.err(ins, f"scale operand {op} form {x!r} not modelled (a VGPR; LLVM emits only VGPRs here)")
        regs[op] = st.vbase(x)
    for op, x in zip(order[:4], ins.operands[:4]):
        if isinstance(x, Reg) and x.file in ("v", "a") and not (x.neg or x.abs or x.half):
            if x.count != nregs[op]:
                raise ctx.err(ins, f"operand {op} takes {nregs[op]} VGPRs, got {x.count}")
            regs[op] = st.vbase(x)
            if row.sparse and op == "D":
                regs["C"] = regs["D"]  # SWMMAC/SMFMAC accumulate in place
        elif op == "C" and isinstance(x, Imm):
            regs[op] = imm_bits(x, "b32", ctx, ins)
        else:
            raise ctx.err(ins, f"operand {op} form {x!r} not modelled")
    (ta, tb, tc, td), neg = signed_types(row, neg, types)
    notes = st.notes

    raw: dict[str, np.ndarray] = {}

    def gather(op: str, w: np.ndarray) -> np.ndarray:
        if row.sparse and op == "A":
            a0, k0 = regs["A"], regs["K"]
            out = []
            for wave in w:
                a_img = st.v[a0: a0 + nregs["A"], wave].T
                k_img = st.v[k0: k0 + nregs["K"], wave].T
                try:  # an index code outside the 2:4 format: refused, never given a meaning (matrix/sparse.py)
                    out.append(unpack(row, "A", a_img, wave_size=ctx.wave, k_regs=k_img, **lay_mods).values)
                except TilesimError as e:
                    raise ctx.err(ins, f"wave {int(wave)}: {e}") from None
            return np.asarray(out, np.float64 if ta.kind not in ("int", "uint") else np.int64)
        rec, flat, primary, shape, _ = plans[op]
        src = regs[op]
        if isinstance(src, int) and op == "C" and isinstance(ins.operands[3], Imm):
            r = np.full((w.size, ctx.wave, nregs["C"] + 1), src, _U32)
        else:
            r = np.zeros((w.size, ctx.wave, nregs[op] + 1), _U32)
            r[:, :, :-1] = np.moveaxis(st.v[src: src + nregs[op]][:, w], 0, -1)
        f = _fields(r, rec)
        raw[op] = f
        t = {"A": ta, "B": tb, "C": tc}[op]
        pf = f[:, primary]
        bad = (f != pf[:, flat]).any(axis=0)
        if bad.any() and len(notes) < 64:
            i = int(np.flatnonzero(bad)[0])
            notes.append(f"line {ins.line} {row.mnemonic}: copies of {op}[{rec[i, 1]}][{rec[i, 2]}] differ "
                         f"(lane {rec[i, 4]} vs lane {rec[primary[flat[i]], 4]}); which copy the hardware reads is "
                         "unknown: the lowest lane's was used, and the run fails")
        return decode(pf, t).astype(np.float64 if t.kind not in ("int", "uint") else np.int64).reshape(w.size, *shape)

    def _scale_bits(op: str, w: np.ndarray) -> np.ndarray:
        """The (w, rows, cols) scale bit patterns SA/SB read from their VGPR's selected byte."""
        rec, flat, primary, shape, _ = plans[op]
        r = np.zeros((w.size, ctx.wave, 2), _U32)
        r[:, :, 0] = st.v[regs[op], w]
        return _fields(r, rec)[:, primary].astype(np.int64).reshape(w.size, *shape[1:])

    dplan = plans["D"]
    d_reg = regs["D"]
    full = np.uint64((1 << ctx.wave) - 1)

    def run(sel: np.ndarray) -> None:
        w = np.flatnonzero(sel)
        if (st.exec_bits()[w] != full).any():
            raise ctx.err(ins, "EXEC is not all ones (the ISA leaves the result undefined)")
        A, B, C = gather("A", w), gather("B", w), gather("C", w)
        replace = None
        if st.mma_hook is not None and not row.sparse and not scaled:  # the layout audit sees every operand slot
            replace = st.mma_hook(ins, row, w, {op: (plans[op][0], raw[op]) for op in "ABC"}, plans["D"][0])
        elif st.mma_hook is not None and hasattr(st.mma_hook, "unaudited"):  # sparse/scaled: said, not skipped
            st.mma_hook.unaudited(ins, row)
        A, B, C = apply_negation(row, A, B, C, neg, neg_hi) if (neg or neg_hi) else (A, B, C)
        if scaled:
            A, B = _apply_scales(row, A, B, {op: _scale_bits(op, w) for op in scaled})
        if td.kind in ("int", "uint"):
            D = np.einsum("...mk,...kn->...mn", A.astype(np.int64), B.astype(np.int64)) + C.astype(np.int64)
            D = decode(encode(D, td), td)
        else:
            D = exact_dot_batched(np.asarray(A, np.float64), np.asarray(B, np.float64), np.asarray(C, np.float64),
                                  td.name)
        if replace is not None:
            D = np.asarray(replace, np.float64).reshape(D.shape)
        bits = encode(D.reshape(w.size, -1), td).astype(_U64)
        rec, flat, _, _, groups = dplan
        out = np.moveaxis(st.v[d_reg: d_reg + nregs["D"]][:, w], 0, -1).copy()  # [w, lane, nregs]
        for g in groups:
            lane, vg, lo, hi = rec[g, 4], rec[g, 3], rec[g, 5].astype(_U64), rec[g, 6].astype(_U64)
            width = hi - lo + _U64(1)
            if int(width[0]) == 64:  # an f64 element fills a VGPR pair
                out[:, lane, vg] = (bits[:, flat[g]] & _U64(0xFFFFFFFF)).astype(_U32)
                out[:, lane, vg + 1] = (bits[:, flat[g]] >> _U64(32)).astype(_U32)
                continue
            mask = ((_U64(1) << width) - _U64(1)) << lo
            cur = out[:, lane, vg].astype(_U64)
            out[:, lane, vg] = ((cur & ~mask) | ((bits[:, flat[g]] << lo) & mask)).astype(_U32)
        st.v[d_reg: d_reg + nregs["D"]][:, w] = np.moveaxis(out, -1, 0)
    return run
