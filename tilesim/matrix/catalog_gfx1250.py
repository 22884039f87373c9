"""gfx1250 rows (wave32 only), split from :mod:`tilesim.matrix.catalog_amd` by concern.

Dense WMMA (16x16x4 f32 … 16x16x128 fp8), the format-selected ``v_wmma_f32_16x16x128_f8f6f4``, the
M=32 ``v_wmma_f32_32x16x128_f4`` and their block-scaled forms (``v_wmma_scale_*``: one scale per
32 k, ``v_wmma_scale16_*``: one per 16 k). The rows reuse catalog_amd's factories; each names its
sources and confidence in its notes and in docs/catalog.md.

Not here, on purpose: gfx1250 SWMMAC (``v_swmmac_*_16x16x64_*``, ``*_16x16x128_*``) — the one source
with its sparse-A, B and index lane maps (AMD's rocjitsu emulator) says its K=128 maps depart from the
CDNA5 ISA we could not read (see docs/catalog.md, "Known gaps").
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from tilesim.layouts.layout import Layout
from tilesim.matrix.catalog_amd import (_IU, FP8_PAIRS, NEG, NEG_HI, SIGNED, _bits, _builtin, _regs, _wmma,
                                        parse_clang_type)
from tilesim.matrix.geometry import AccGeometry, FormatGeometry, InputGeometry
from tilesim.matrix.instruction import SCALE_FORMAT_MODIFIERS, Builtin, Immediate, MatrixInstruction, Modifier
from tilesim.matrix.scale import ScaleGeometry

__all__ = ["GFX1250_ROWS", "F8F6F4_FORMATS", "F8F6F4_VGPRS", "SCALE_FMT_CODES", "f8f6f4_geometry"]

# Sources, cited by the rows (docs/catalog.md gives the same with confidence per row).
CK_TRITON = "Composable Kernel LayoutFromDataType / Triton WMMA v3 (amd_wmma version 3) dot-operand layout"
COMGR = ("ROCm comgr hotswap WMMA rewrites (patch-wmma-split, patch-wmma-scale16): exact decompositions "
         "of 32x16x128_f4 into two 16x16x128_f8f6f4 (M halves) and of block-16 into block-32 scaled WMMA")
TRITON_SCALED = ("Triton gfx1250 scaled dot (accelerate-amd-matmul-wmma-gfx1250.mlir: kWidth = 16 bytes; "
                 "WMMA.cpp generateScaledWMMAIntrinsic; chooseScaledWmmaScaleLayout)")
CLANG = "clang 22 BuiltinsAMDGPU gfx1250 builtins; operand tuple sizes from the ISA clang emits (tests)"
ROCJITSU = ("AMD rocjitsu emulator, rocjitsu/isa/arch/amdgpu/shared/mma_exec.h (wmma_input_loc: \"CDNA5 K=128 "
            "dense WMMA uses 16-element K blocks\", K=64 too; wmma_block_scaled_input_loc: 16 k (8-bit) / 32 k "
            "(4/6-bit) per lane group; fp8_e5m3_to_f32)")


# --------------------------------------------------------------------------- dense WMMA
def _dense() -> list[MatrixInstruction]:
    """gfx1250 dense WMMA. A/B: chunks of ``kl`` k alternate the two lane halves — 16 bytes of k
    per chunk (f32: 2 k); C/D as RDNA4 wave32. 16-bit rows: Composable Kernel ``LayoutFromDataType``
    = Triton WMMA v3 = rocjitsu. 8-bit rows: 16-k chunks (rocjitsu ``wmma_input_loc``, the f8f6f4
    fp8 format of comgr and Triton's scaled dot); CK's 8-k chunks for them are a K order shared by
    A and B, which CK permutes freely (invisible in D). Medium confidence: the CDNA5 ISA tables were
    not available to us; see docs/catalog.md.
    """
    rows = []
    specs = [
        ("v_wmma_f32_16x16x4_f32", 4, "f32", "f32", "f32", 2, "V8fIbV2fIbV2fIsV8fIbIb"),
        ("v_wmma_f32_16x16x32_f16", 32, "f16", "f32", "f32", 8, "V8fIbV16hIbV16hIsV8fIbIb"),
        ("v_wmma_f32_16x16x32_bf16", 32, "bf16", "f32", "f32", 8, "V8fIbV16yIbV16yIsV8fIbIb"),
        ("v_wmma_f16_16x16x32_f16", 32, "f16", "f16", "f16", 8, "V8hIbV16hIbV16hIsV8hIbIb"),
        ("v_wmma_bf16_16x16x32_bf16", 32, "bf16", "bf16", "bf16", 8, "V8yIbV16yIbV16yIsV8yIbIb"),
        ("v_wmma_bf16f32_16x16x32_bf16", 32, "bf16", "f32", "bf16", 8, "V8yIbV16yIbV16yIsV8fIbIb"),
        ("v_wmma_i32_16x16x64_iu8", 64, "i8", "i32", "i32", 16, "V8iIbV8iIbV8iV8iIbIb"),
    ]
    for kk, vec in ((64, "V8i"), (128, "V16i")):
        for out, osig in (("f32", "V8f"), ("f16", "V8h")):
            specs += [(f"v_wmma_{out}_16x16x{kk}_{an}_{bn}", kk, (an, bn), out, out, 16, f"{osig}{vec}{vec}Is{osig}IbIb")
                      for an, bn in FP8_PAIRS]
    for name, k, a, c, d, kl, sig in specs:
        at, bt = (f"{a[0]}_ocp", f"{a[1]}_ocp") if isinstance(a, tuple) else (a, a)
        ab, cb, db = _bits(at), _bits(c), _bits(d)
        per_lane = 16 * k // 32
        inp = InputGeometry(16, 2, kl, 32, per_lane)
        acc_c = AccGeometry(16, 2, 8, 32, 8)
        geo = {32: {"A": (inp, ab), "B": (inp, ab), "C": (acc_c, cb), "D": (acc_c, db)}}
        regs = {32: _regs(geo[32])}
        mods = (NEG, NEG_HI) if ab >= 16 else (SIGNED,) if at == "i8" else ()
        # clang's gfx1250 forms: (neg_a, A, neg_b, B, c_mod, C, reuse_a, reuse_b); iu8 has signedness bits
        # instead of neg and no c_mod; fp8/f8f6f4 have neither
        imms = (("neg_a", "neg_b", "c_mod") if ab >= 16 else ("a_signed", "b_signed") if at == "i8"
                else ("c_mod",)) + ("reuse_a", "reuse_b")
        at, bt = _IU.get(at, at), _IU.get(bt, bt)
        row = _wmma("gfx1250", name, k, at, c, None, geo, regs, b=bt, d=d, mods=mods,
                    builtins=(_builtin("__builtin_amdgcn_" + name[2:], sig, 32, imms),),
                    notes=("layout from CK/Triton/rocjitsu (medium confidence); cycles unknown" if ab >= 16 else
                           "layout: 16-k chunks from rocjitsu, = the f8f6f4 fp8 format (comgr, Triton scaled "
                           "dot); CK's 8-k chunks differ by a shared K order (medium confidence); cycles unknown"))
        if ab < 16:
            row = replace(row, citation=f"{ROCJITSU}; {COMGR}; {CLANG}")
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- f8f6f4 and 32x16 f4
# gfx1250 MATRIX_FMT codes (the assembler's matrix_a_fmt/matrix_b_fmt: FP8=0, BF8=1, FP6=2, BF6=3,
# FP4=4) — the codes gfx950 carries in CBSZ/BLGP. tilesim names the fields by those gfx950 slots
# (``cbsz`` = matrix_a_fmt, ``blgp`` = matrix_b_fmt, modifier kind ``format``), so one format
# machinery serves both.
F8F6F4_FORMATS = {0: "fp8_ocp", 1: "bf8_ocp", 2: "fp6", 3: "bf6", 4: "fp4"}
# VGPRs of an A/B tuple by format: 16/12/8 (clang prints v[0:15] / v[0:11] / v[0:7]; tests check it).
F8F6F4_VGPRS = {0: 16, 1: 16, 2: 12, 3: 12, 4: 8}


def f8f6f4_geometry(code: int) -> tuple[InputGeometry, int]:
    """A/B geometry of a gfx1250 f8f6f4 format: 16-byte chunks of k alternate the two lane halves.

    fp8/bf8: lanes 0-15 hold the low 16 k of every 32-k block, lanes 16-31 the high 16 (comgr's
    scale16 rewrite isolates a 16-k subblock with a lane mask); fp4 and fp6/bf6: 32-k blocks 0 and 2
    in lanes 0-15, 1 and 3 in lanes 16-31, each block's low and high 16 k in consecutive groups of 2
    (fp4) or 3 (fp6) VGPRs (comgr: "a whole 32-block sits in one lane group", subblocks of "FP4=2,
    FP6=3" VGPRs; rocjitsu's block-scaled layout: 32 k per lane group for 4/6-bit; Triton: kWidth 16
    bytes for fp4). 6-bit elements pack densely and straddle VGPRs, as on gfx950.
    """
    bits = _bits(F8F6F4_FORMATS[code])
    return InputGeometry(16, 2, 16 if bits == 8 else 32, 32, 64), bits


def _format_geometry(modifier: str) -> tuple[FormatGeometry, int]:
    entries = tuple((code, t, *f8f6f4_geometry(code), F8F6F4_VGPRS[code]) for code, t in F8F6F4_FORMATS.items())
    return FormatGeometry(modifier, entries), 8


_FMT_A = Modifier("cbsz", tuple(F8F6F4_FORMATS), "matrix_a_fmt: A format 0 fp8, 1 bf8, 2 fp6, 3 bf6, 4 fp4",
                  "format")
_FMT_B = Modifier("blgp", tuple(F8F6F4_FORMATS), "matrix_b_fmt: B format 0 fp8, 1 bf8, 2 fp6, 3 bf6, 4 fp4",
                  "format")

# matrix_a_scale_fmt / matrix_b_scale_fmt codes (LLVM AMDGPUInstPrinter: MATRIX_SCALE_FMT_E8, _E5M3,
# _E4M3); the same byte placement for each (rocjitsu decode_wmma_scale_byte reads one byte per scale).
SCALE_FMT_CODES = ("e8m0", "e5m3", "e4m3")

# The builtins' immediates. Formats come from the format modifiers, the scale row selects from
# opsel_a/opsel_b, the scale formats from a_scale_fmt/b_scale_fmt (codes SCALE_FMT_CODES); the rest
# stay 0: C modifiers and reuse hints.
_IMMS = {imm.name: imm for imm in (
    Immediate("matrix_a_fmt", "cbsz"), Immediate("matrix_b_fmt", "blgp"), Immediate("c_mod"),
    Immediate("a_scale_row", "opsel_a"), Immediate("a_scale_fmt", "a_scale_fmt"),
    Immediate("b_scale_row", "opsel_b"), Immediate("b_scale_fmt", "b_scale_fmt"),
    Immediate("reuse_a"), Immediate("reuse_b"),
)}


def _builtin1250(name: str, sig: str, imms: tuple[str, ...]) -> Builtin:
    ret, args = parse_clang_type(sig)
    names = iter(imms)
    named = tuple(f"imm:{next(names)}" if t.startswith("imm:") else t for t in args)
    if next(names, None) is not None:
        raise ValueError(f"{name}: more immediate names than immediates in {sig}")
    return Builtin(name, ret, named, 32, tuple(_IMMS[t[4:]] for t in named if t.startswith("imm:")))


_FP4_A = InputGeometry(16, 2, 32, 32, 64)  # = f8f6f4_geometry(4)


def _a_32x16_f4(**_mods: int) -> Layout:
    """A of v_wmma_*_32x16x128_f4: rows 0-15 in VGPRs 0-7 and rows 16-31 in VGPRs 8-15, each half
    laid out as the fp4 A of 16x16x128_f8f6f4 (comgr splits the instruction exactly that way)."""
    def where(block: np.ndarray, row: np.ndarray, col: np.ndarray) -> dict[str, np.ndarray]:
        lane, slot = _FP4_A.place(row % 16, col, block, 128, 1)
        return {"lane": lane, "slot": slot + _FP4_A.slots * (row // 16)}

    return Layout.from_logical({"lane": 32, "slot": 128}, {"block": 1, "row": 32, "col": 128}, where, elem_bits=4)


_F8F6F4_NOTE = ("formats per operand (matrix_a_fmt/matrix_b_fmt as cbsz/blgp): fp8/bf8 16 VGPRs, 16-k runs "
                "alternate lane halves; fp4 8 VGPRs and fp6/bf6 12 VGPRs, 32-k runs alternate lane halves (comgr, "
                "Triton, rocjitsu; medium confidence; order inside a 16-k run assumed natural); cycles unknown")
_F4_NOTE = ("A = two 16x16x128_f8f6f4 fp4 A tuples (rows 0-15, 16-31), B shared, D = two 16x16 D tuples "
            "(comgr's exact M-split); medium confidence; cycles unknown")
_SCALE_NOTE = ("; block scales SA/SB: one E8M0 byte per {per} k, byte kb of an {ty} per lane, row/column r in "
               "lane r (opsel = matrix_*_scale ROW1: lanes 16-31; comgr + Triton, medium confidence); "
               "a_scale_fmt/b_scale_fmt = matrix_*_scale_fmt read the bytes as E5M3 (1) or E4M3 (2)")


def _scales(m: int, block: int) -> dict[str, tuple[ScaleGeometry, int]]:
    """SA/SB of a gfx1250 scaled WMMA: the scale of row (SA) or column (SB) r, k-block kb is byte kb of
    lane r's scale register — an i32 holds a 128-k row's four block-32 scales, an i64 its eight block-16
    ones (comgr: "[byte0..3] = k-block 0..3", block-16 "Vn bytes 0-3, Vn+1 bytes 4-7"; Triton
    ``chooseScaledWmmaScaleLayout``: 4 consecutive k-blocks per register, lanes 0-15 along M/N).
    matrix_a_scale/matrix_b_scale (tilesim: opsel_a/opsel_b) = 1 (ROW1) read lanes 16-31 instead
    (Triton: "1: use scales in 16..31 lanes"; comgr feeds rows 16-31 of the M=32 form that way);
    the 32-row SA of the M=32 form fills lanes 0-31, so it has no select."""
    reg_bits = 128 // block * 8
    out = {}
    for op, rows, sel in (("SA", m, "opsel_a"), ("SB", 16, "opsel_b")):
        place = InputGeometry(rows, 1, 1, 32, reg_bits // 8)
        out[op] = (ScaleGeometry(op, block, "e8m0", place, reg_bits, sel, (0, 1) if rows == 16 else (0,),
                                 select_stride=0, select_lanes=16, formats=SCALE_FMT_CODES), 8)
    return out


def _scale_mods(geo: dict) -> tuple[Modifier, ...]:
    def effect(op: str, g: ScaleGeometry) -> str:
        field = f"matrix_{op[1].lower()}_scale"
        if len(g.select_values) > 1:
            return f"{field}: {op} from lanes 0-15 (0) or 16-31 (1, ROW1)"
        return f"{field}: {op} of the 32 rows in lanes 0-31 (ROW1 not modelled)"

    sel = tuple(Modifier(g.select, g.select_values, effect(op, g), "scale_select") for op, (g, _) in geo.items())
    fmts = tuple(Modifier(SCALE_FORMAT_MODIFIERS[op], tuple(range(len(g.formats))),
                          f"matrix_{op[1].lower()}_scale_fmt: {op} bytes as "
                          + ", ".join(f"{c} {f.upper()}" for c, f in enumerate(g.formats)), "scale_format")
                 for op, (g, _) in geo.items())
    return sel + fmts


def _f8f6f4_rows() -> list[MatrixInstruction]:
    rows = []
    acc = AccGeometry(16, 2, 8, 32, 8)
    for prefix, per, sty, ssig in (("", 0, "", ""), ("scale_", 32, "i32", "IiIiiIiIiiIbIb"),
                                   ("scale16_", 16, "i64", "IiIiLiIiIiLiIbIb")):
        name = f"v_wmma_{prefix}f32_16x16x128_f8f6f4"
        geo = {32: {"A": _format_geometry("cbsz"), "B": _format_geometry("blgp"), "C": (acc, 32), "D": (acc, 32)}}
        regs = {32: {"A": 16, "B": 16, "C": 8, "D": 8}}  # A/B: the fp8 default, the builtin's V16i
        imms = ("matrix_a_fmt", "matrix_b_fmt", "c_mod")
        if prefix:
            imms += ("a_scale_row", "a_scale_fmt", "b_scale_row", "b_scale_fmt", "reuse_a", "reuse_b")
        mods: tuple[Modifier, ...] = (_FMT_A, _FMT_B)
        if prefix:
            scales = _scales(16, per)
            geo[32].update(scales)
            regs[32].update({op: g.registers for op, (g, _) in scales.items()})
            mods += _scale_mods(scales)
        bl = _builtin1250("__builtin_amdgcn_" + name[2:], "V8fIiV16iIiV16iIsV8f" + ssig, imms)
        note = _F8F6F4_NOTE + (_SCALE_NOTE.format(per=per, ty=sty) if prefix else "")
        row = _wmma("gfx1250", name, 128, "fp8_ocp", "f32", None, geo, regs, mods=mods, builtins=(bl,), notes=note)
        rows.append(replace(row, citation=f"{COMGR}; {TRITON_SCALED}; {CLANG}"))
    b_fp4 = (_FP4_A, 4)
    acc32 = AccGeometry(16, 2, 8, 32, 16)  # rows 16-31 continue in VGPRs 8-15
    for prefix, per, sty, ssig in (("", 0, "", ""), ("scale_", 32, "i32", "IiIiiIiIiiIbIb"),
                                   ("scale16_", 16, "i64", "IiIiLiIiIiLiIbIb")):
        name = f"v_wmma_{prefix}f32_32x16x128_f4"
        geo = {32: {"A": _a_32x16_f4, "B": b_fp4, "C": (acc32, 32), "D": (acc32, 32)}}
        regs = {32: {"A": 16, "B": 8, "C": 16, "D": 16}}
        imms = ("c_mod",) + (("a_scale_row", "a_scale_fmt", "b_scale_row", "b_scale_fmt", "reuse_a", "reuse_b")
                             if prefix else ())
        mods = ()
        if prefix:
            scales = _scales(32, per)
            geo[32].update(scales)
            regs[32].update({op: g.registers for op, (g, _) in scales.items()})
            mods = _scale_mods(scales)
        bl = _builtin1250("__builtin_amdgcn_" + name[2:], "V16fV16iV8iIsV16f" + ssig, imms)
        note = _F4_NOTE + (_SCALE_NOTE.format(per=per, ty=sty) if prefix else "")
        row = _wmma("gfx1250", name, 128, "fp4", "f32", None, geo, regs, m=32, mods=mods, builtins=(bl,), notes=note)
        rows.append(replace(row, citation=f"{COMGR}; {TRITON_SCALED}; {CLANG}"))
    return rows


GFX1250_ROWS: list[MatrixInstruction] = _dense() + _f8f6f4_rows()
